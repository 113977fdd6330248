"""Series built a block of points at a time, in bounded memory.

A reader that streams a log appends each block's points to a :class:`Builder`
per metric. The points stay in memory up to a budget shared by all the metrics
of the read; past it they are spilled to an unnamed temporary file, and the
series built from them is a :class:`SpooledSeries`: the store writes it a chunk
at a time, and only what asks for its whole arrays (the diagnostics, for the
few metrics they read) loads them. A log that fits the budget gives plain
in-memory series, as if it had been read whole.
"""

from __future__ import annotations

import tempfile
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from core.runlog import Series

# Bytes of points a read keeps in memory before it spills them to its spool file.
BUDGET = 16 << 20
_STEP = np.dtype(np.int64)
_FLOAT = np.dtype(np.float64)


@dataclass(frozen=True)
class _Part:
    """A run of a series' points: arrays in memory, or where they lie in the spool file."""

    count: int
    arrays: tuple[np.ndarray, ...] | None = None  # steps, values[, wall times] in memory
    offset: int = -1  # else: their byte offset in the file, one column after the other

    def read(self, file: IO[bytes], column: int, start: int, stop: int) -> np.ndarray:
        if self.arrays is not None:
            return self.arrays[column][start:stop]
        out = np.empty(stop - start, _STEP if column == 0 else _FLOAT)
        file.seek(self.offset + 8 * (column * self.count + start))
        file.readinto(memoryview(out).cast("B"))
        return out


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
                self.file = tempfile.TemporaryFile(prefix="headroom-spool-")
            for builder in self._builders:
                builder._spill(self.file)
            self._held = 0


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
    time; ``steps``, ``values`` and ``wall_time`` load (and keep) the whole arrays on first use."""

    def __init__(self, name: str, original: str, file: IO[bytes] | None, parts: list[_Part],
                 wall_time: bool, scale: float = 1.0) -> None:
        self.name, self.original = name, original or name
        self._file, self._parts, self._wall, self._scale = file, parts, wall_time, scale
        self._ends = np.cumsum([p.count for p in parts]).tolist()
        self._loaded: dict[int, np.ndarray] = {}

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
        if column not in self._loaded:
            self._loaded[column] = self._read(column, 0, len(self))
        return self._loaded[column]

    def _read(self, column: int, start: int, stop: int) -> np.ndarray:
        """Points ``start:stop`` of one column (0 steps, 1 values, 2 wall times), across parts."""
        pieces = list(self._pieces(column, start, stop))
        out = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if column == 1 and self._scale != 1.0:
            out = out * self._scale
        return out

    def _pieces(self, column: int, start: int, stop: int) -> Iterator[np.ndarray]:
        index = bisect_right(self._ends, start)
        if index == len(self._parts) or start >= stop:
            yield np.empty(0, _STEP if column == 0 else _FLOAT)
            return
        while index < len(self._parts) and start < stop:
            first = self._ends[index] - self._parts[index].count
            end = min(stop, self._ends[index])
            yield self._parts[index].read(self._file, column, start - first, end - first)
            start, index = end, index + 1
