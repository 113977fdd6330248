"""Series built a block of points at a time, in bounded memory.

A reader that streams a log appends each block's points to a :class:`Builder`
per metric. The points stay in memory up to a budget shared by all the metrics
of the read; past it they are spilled to an unnamed file in Headroom's data
folder, and the series built from them is a :class:`SpooledSeries`: the store
writes it a chunk at a time, and only what asks for its whole arrays (the
diagnostics, for the few metrics they read) loads them. A log that fits the budget gives plain
in-memory series, as if it had been read whole.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from core.runlog import Series

# Bytes of points a read keeps in memory before it spills them to its spool file.
BUDGET = 16 << 20
# Bytes of whole columns read back that stay for reuse, over all spooled series (the one read
# last stays whatever its size): a rule that reads a series again finds it, and the rules
# that read a run's metrics one after another never make it hold every one of them.
KEEP_BYTES = 64 << 20
_STEP = np.dtype(np.int64)
_FLOAT = np.dtype(np.float64)


@dataclass(frozen=True)
class _Part:
    """A run of a series' points: arrays in memory, or where they lie in the spool file."""

    count: int
    arrays: tuple[np.ndarray, ...] | None = None  # steps, values[, wall times] in memory
    offset: int = -1  # else: their byte offset in the file, one column after the other

    def read(self, file: IO[bytes], column: int, start: int, out: np.ndarray) -> None:
        """Points ``start:start + len(out)`` of one column into ``out``."""
        if self.arrays is not None:
            out[:] = self.arrays[column][start : start + len(out)]
            return
        file.seek(self.offset + 8 * (column * self.count + start))
        file.readinto(memoryview(out).cast("B"))


class Spool:
    """The points of one read's series: in memory up to ``budget`` bytes, then in a file."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = BUDGET if budget is None else budget
        self.file: IO[bytes] | None = None
        self._held = 0
        self._builders: list[Builder] = []

    def builder(self, wall_time: bool = False) -> Builder:
        """A new series' builder; ``wall_time``: its blocks carry wall times too."""
        builder = Builder(self, wall_time)
        self._builders.append(builder)
        return builder

    def _hold(self, nbytes: int) -> None:
        self._held += nbytes
        if self._held > self.budget:
            if self.file is None:
                self.file = tempfile.TemporaryFile(prefix="headroom-spool-", dir=_folder())
            for builder in self._builders:
                builder._spill(self.file)
            self._held = 0


def _folder() -> Path | None:
    """Headroom's data folder, beside its database: on disk, where the system's temporary
    folder is often memory (tmpfs), which spilling to would not spare. None: the latter."""
    from tracker.db.engine import data_dir

    folder = data_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


class Builder:
    """One series' points as a reader finds them, a block at a time."""

    def __init__(self, spool: Spool, wall_time: bool) -> None:
        self._spool = spool
        self._wall = wall_time
        self._parts: list[_Part] = []
        self._pending: list[tuple[np.ndarray, ...]] = []
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, steps: np.ndarray, values: np.ndarray, wall_time: np.ndarray | None = None) -> None:
        if not len(steps):
            return
        arrays = (np.asarray(steps, _STEP), np.asarray(values, _FLOAT))
        if self._wall:
            arrays += (np.asarray(wall_time, _FLOAT),)
        self._pending.append(arrays)
        self._count += len(steps)
        self._spool._hold(sum(a.nbytes for a in arrays))

    def build(self, name: str, original: str = "", wall_time: bool = True) -> Series:
        """The series; ``wall_time=False`` leaves the blocks' wall times out."""
        self._settle()
        self._spool._builders.remove(self)  # nothing more to spill: the series owns its parts
        wall = self._wall and wall_time
        if not self._parts:
            return Series(name, np.empty(0, _STEP), np.empty(0, _FLOAT), original)
        if len(self._parts) == 1 and self._parts[0].arrays is not None:
            arrays = self._parts[0].arrays
            return Series(name, arrays[0], arrays[1], original, arrays[2] if wall else None)
        return SpooledSeries(name, original, self._spool.file, list(self._parts), wall)

    def _settle(self) -> None:
        """The pending blocks as one part in memory."""
        if self._pending:
            columns = zip(*self._pending, strict=True)
            merged = tuple(np.concatenate(c) if len(c) > 1 else c[0] for c in columns)
            self._parts.append(_Part(len(merged[0]), merged))
            self._pending = []

    def _spill(self, file: IO[bytes]) -> None:
        self._settle()
        for i, part in enumerate(self._parts):
            if part.arrays is not None:
                file.seek(0, 2)
                offset = file.tell()
                for array in part.arrays:
                    file.write(memoryview(np.ascontiguousarray(array)).cast("B"))
                self._parts[i] = _Part(part.count, offset=offset)


class SpooledSeries(Series):
    """A series whose points wait in a spool file: :meth:`chunks` reads them a chunk at a
    time; ``steps``, ``values`` and ``wall_time`` read a whole column at each use, kept by the
    caller alone (the diagnostics, one rule after another, never hold every column at once)."""

    def __init__(self, name: str, original: str, file: IO[bytes] | None, parts: list[_Part],
                 wall_time: bool, scale: float = 1.0) -> None:
        self.name, self.original = name, original or name
        self._file, self._parts, self._wall, self._scale = file, parts, wall_time, scale
        self._ends = np.cumsum([p.count for p in parts]).tolist()
        weakref.finalize(self, _kept.forget, id(self))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __repr__(self) -> str:
        return f"SpooledSeries({self.name!r}, {len(self):,} points)"

    @property
    def steps(self) -> np.ndarray:
        return self._whole(0)

    @property
    def values(self) -> np.ndarray:
        return self._whole(1)

    @property
    def wall_time(self) -> np.ndarray | None:
        return self._whole(2) if self._wall else None

    @property
    def has_wall_time(self) -> bool:
        return self._wall

    def at(self, index: int) -> tuple[int, float]:
        return int(self._read(0, index, index + 1)[0]), float(self._read(1, index, index + 1)[0])

    def slice(self, start: int, stop: int) -> Series:
        stop = min(stop, len(self))
        wall = self._read(2, start, stop) if self._wall else None
        return Series(self.name, self._read(0, start, stop), self._read(1, start, stop), self.original, wall)

    def scaled(self, factor: float) -> Series:
        if factor == 1.0:
            return self
        return SpooledSeries(self.name, self.original, self._file, self._parts, self._wall,
                             self._scale * factor)

    def _whole(self, column: int) -> np.ndarray:
        key = (id(self), column)
        found = _kept.get(key)
        if found is None:
            found = self._read(column, 0, len(self))
            _kept.put(key, found)
        return found

    def _read(self, column: int, start: int, stop: int) -> np.ndarray:
        """Points ``start:stop`` of one column (0 steps, 1 values, 2 wall times), across parts,
        read straight into the array returned (no piece is held beside it)."""
        start, stop = min(start, len(self)), min(stop, len(self))
        out = np.empty(max(stop - start, 0), _STEP if column == 0 else _FLOAT)
        index, at = bisect_right(self._ends, start), 0
        while start < stop:
            first = self._ends[index] - self._parts[index].count
            end = min(stop, self._ends[index])
            self._parts[index].read(self._file, column, start - first, out[at : at + end - start])
            at, start, index = at + end - start, end, index + 1
        if column == 1 and self._scale != 1.0:
            out *= self._scale
        return out


class _Kept:
    """The columns read back last, up to ``KEEP_BYTES``, by (series id, column)."""

    def __init__(self) -> None:
        self._arrays: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int]) -> np.ndarray | None:
        with self._lock:
            if key in self._arrays:
                self._arrays.move_to_end(key)
            return self._arrays.get(key)

    def put(self, key: tuple[int, int], array: np.ndarray) -> None:
        with self._lock:
            self._arrays[key] = array
            held = sum(a.nbytes for a in self._arrays.values())
            while len(self._arrays) > 1 and held > KEEP_BYTES:
                held -= self._arrays.popitem(last=False)[1].nbytes

    def forget(self, series: int) -> None:
        with self._lock:
            for key in [k for k in self._arrays if k[0] == series]:
                del self._arrays[key]


_kept = _Kept()
