"""The one Headroom JSONL writer that every recorder uses (format in docs/design.md).

Each record is one line, flushed as soon as it is written, so a crash loses at
most the line being written and a reader following the file sees each step at
once. There is no fsync per line (it costs milliseconds on some filesystems);
flushed lines survive the process being killed, only a machine crash can lose
them. Values that are not numbers are dropped with one warning per key.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, TextIO

FORMAT_VERSION = 1
RUN_FILE = "headroom.jsonl"  # the callbacks' default name in a run's folder
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
HEADER_PREFIX = b'{"headroom"'


class JsonlWriter:
    """Appends records to a Headroom JSONL file whose first line is the run header."""

    def __init__(
        self, path: str | os.PathLike, header: dict[str, Any], *, resume: bool = False
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.moved_aside: Path | None = None
        if resume and _is_headroom_log(self.path):
            _drop_partial_line(self.path)
        elif self.path.exists() and self.path.stat().st_size:
            self.moved_aside = _move_aside(self.path)
        appending = _is_headroom_log(self.path)
        self._file: TextIO | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._warned: set[str] = set()
        if not appending:
            self._write({"headroom": FORMAT_VERSION, "run": header})

    @property
    def closed(self) -> bool:
        return self._file is None

    def metrics(self, step: int, wall_time: float, values: dict[str, Any]) -> None:
        """One row of metrics at ``step``; None values are absent, not zero."""
        self._write({"step": step, "wall_time": wall_time, **self.numbers(values)})

    def record(self, step: int, wall_time: float, kind: str, body: dict[str, Any]) -> None:
        """A checkpoint, event or summary record (``{"step", kind: body}``)."""
        self._write({"step": step, "wall_time": wall_time, kind: body})

    def numbers(self, values: dict[str, Any]) -> dict[str, float | int]:
        """The numeric values of ``values``: numbers, numpy scalars, one-element tensors."""
        out = {}
        for key, value in values.items():
            if value is None:
                continue
            number = _number(value)
            if number is None:
                self._warn(key, value)
            else:
                out[key] = number
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def _write(self, obj: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(obj, default=str, separators=(", ", ": ")) + "\n")
        self._file.flush()

    def _warn(self, key: str, value: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn(f"{key!r} is a {type(value).__name__}, not a number; not recorded")


def warn(message: str) -> None:
    """A RuntimeWarning pointing at the training script's line, not at the recorder's."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"Headroom recorder: {message}", RuntimeWarning, stacklevel=level)


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    item = getattr(value, "item", None)  # numpy scalars and one-element tensors
    if item is None:
        return None
    try:
        value = item()
    except (ValueError, RuntimeError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _is_headroom_log(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HEADER_PREFIX)) == HEADER_PREFIX
    except OSError:
        return False


def _drop_partial_line(path: Path) -> None:
    """Cut a last line that a killed run left half-written, so appended lines stay whole."""
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        pos = size
        while pos > 0:
            start = max(0, pos - 65536)
            f.seek(start)
            cut = f.read(pos - start).rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return
            pos = start
        f.truncate(0)


def _move_aside(path: Path) -> Path:
    """Keep an earlier run's log under the first free ``name.N.jsonl``; nothing is overwritten."""
    n = 1
    while True:
        target = path.with_name(f"{path.stem}.{n}{path.suffix}")
        if not target.exists():
            path.rename(target)
            return target
        n += 1
