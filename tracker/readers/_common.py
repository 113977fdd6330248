"""Helpers every reader shares: bounded head reads, friendly and bounded JSON/YAML parsing."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import IO, Any

import numpy as np

from core.runlog import RunLog

HEAD_BYTES = 64 * 1024
# Bytes of a big log parsed at a time: its size never sets the memory an ingest takes.
BLOCK_BYTES = 4 << 20
# Deeper JSON or YAML is no log: C parsers recurse once per level and overflow the stack.
MAX_DEPTH = 100
# Values a YAML document may expand to through its aliases (a 442-byte "billion laughs" has 10**9).
MAX_YAML_VALUES = 1_000_000
_SPECIAL = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
            (stat.S_ISBLK, "a device"))
# Bytes that are not an opening bracket or a newline (deleted before counting brackets).
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{\n")
_JSON_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
# File names that say nothing about the run; such a file is named after its folder too.
GENERIC_STEMS = {
    "metrics", "log", "logs", "train", "training", "history", "results", "progress", "output",
    "scalars", "stats", "data",
    # console captures and trainer logs
    "stdout", "stderr", "out", "console", "main", "nohup", "trainer_log", "running_log", "logging",
    "gpu_metrics",
}
# Folders that say nothing either: W&B keeps a run's console in <run folder>/files/output.log.
GENERIC_FOLDERS = {"files"}


class ReaderError(Exception):
    """A file a reader cannot use; the message is one line a person understands."""


def describe(err: Exception) -> str:
    """An unexpected exception (a bug) in one line: its type and its message's first line."""
    first = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {first}"


def file_run_name(path: Path) -> str:
    """A run name for a lone log file: its stem, with its folder when the stem is generic."""
    if path.stem.lower() in GENERIC_STEMS and path.parent.name:
        folder = path.parent
        if folder.name in GENERIC_FOLDERS and folder.parent.name:
            folder = folder.parent
        return f"{folder.name}/{path.stem}"
    return path.stem


class NotRegularFile(OSError):
    """A FIFO, socket or device where a file was expected: opening it could block forever."""


def special_kind(path: Path) -> str | None:
    """"a FIFO", "a socket" or "a device" when ``path`` is one, else None (no open needed)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def open_regular(path: Path) -> IO[bytes]:
    """Open a regular file for reading; anything else is refused without blocking.

    The type is checked before opening, and again on the open descriptor
    (opened non-blocking, so a FIFO swapped in between cannot hang the call).
    """
    kind = special_kind(path)
    if kind is None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        mode = os.fstat(fd).st_mode
        kind = next((k for test, k in _SPECIAL if test(mode)), None)
        if kind is None:
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        os.close(fd)
    raise NotRegularFile(f"not a regular file ({kind}): skipped")


def read_regular(path: Path) -> bytes:
    with open_regular(path) as f:
        return f.read()


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of a file (empty for folders, FIFOs and unreadable files)."""
    try:
        with open_regular(path) as f:
            return f.read(n)
    except OSError:
        return b""


def head_text(path: Path, n: int = HEAD_BYTES) -> str:
    """The head of a file as text, or "" when it looks binary."""
    data = head(path, n)
    if looks_binary(data):
        return ""
    return data.decode("utf-8", errors="replace")


def looks_binary(data: bytes) -> bool:
    """NUL bytes or mostly non-text bytes: not a text log."""
    if not data:
        return False
    if b"\x00" in data:
        return True
    text_bytes = bytes(range(32, 127)) + b"\n\r\t\f\b\x1b"
    odd = sum(1 for b in data[:4096] if b not in text_bytes and b < 128)
    return odd / min(len(data), 4096) > 0.1


def read_text(path: Path) -> str:
    """Whole file as text; invalid UTF-8 bytes become U+FFFD rather than failing."""
    data = read_regular(path)
    if not data.strip():
        raise ReaderError("empty file")
    if looks_binary(data[:HEAD_BYTES]):
        raise ReaderError("binary data, not a text log")
    return data.decode("utf-8", errors="replace")


def load_json(path: Path) -> Any:
    """Parse a JSON document with an error that names the line and what is wrong."""
    return parse_json(read_text(path))


def parse_json(text: str) -> Any:
    """A JSON document, refused with a named line when nested deeper than :data:`MAX_DEPTH`."""
    if text.count("[") + text.count("{") > MAX_DEPTH:
        check_depth(text.encode("utf-8", errors="surrogatepass"))
    try:
        return json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise ReaderError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) - 1 or "Unterminated string" in err.msg:
            raise ReaderError(f"line {err.lineno}: truncated JSON") from None
        raise ReaderError(f"line {err.lineno} column {err.colno}: invalid JSON ({err.msg})") from None


def check_depth(data: bytes, first_line: int = 1) -> None:
    """Raise :class:`ReaderError` naming the first line of JSON nested deeper than MAX_DEPTH.

    A fast pass counts opening brackets per line (brackets in strings count
    too, so it can only overestimate); the few lines it flags are measured
    exactly, strings left out. pyarrow's parser segfaults on 20,000 levels.
    """
    _check_suspects(data, _suspects(data.translate(None, _NOT_OPENING)), first_line)


def check_file_depth(path: Path) -> None:
    """:func:`check_depth` of a file, read in blocks (the whole file only when a line is suspect)."""
    with open_regular(path) as f:
        opening = b"".join(iter(lambda: f.read(1 << 24).translate(None, _NOT_OPENING), b""))
    suspects = _suspects(opening)
    if len(suspects):
        _check_suspects(read_regular(path), suspects, 1)


def _suspects(opening: bytes) -> np.ndarray:
    """Lines (from 0) with more opening brackets than MAX_DEPTH, from the brackets and newlines."""
    marks = np.frombuffer(opening, dtype=np.uint8)
    newline = marks == ord("\n")
    line_of = np.cumsum(newline)[~newline]  # the line of each opening bracket
    return np.flatnonzero(np.bincount(line_of) > MAX_DEPTH) if len(line_of) else line_of


def _check_suspects(data: bytes, suspects: np.ndarray, first_line: int) -> None:
    if len(suspects) == 0:
        return
    lines = data.split(b"\n")
    for index in suspects.tolist():
        if _depth(lines[index]) > MAX_DEPTH:
            raise ReaderError(f"line {first_line + index}: JSON nested deeper than {MAX_DEPTH} levels")


def _depth(line: bytes) -> int:
    """The deepest nesting of one JSON text, its strings left out."""
    brackets = np.frombuffer(_JSON_STRING.sub(b"", line).translate(None, _NOT_BRACKET), np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max(initial=0))


_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _constant(name: str) -> float:
    # JSON writers in the field emit NaN, Infinity and -Infinity; keep them as floats.
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def load_yaml(path: Path) -> Any:
    """Parse a YAML file safely: Python object tags are read as plain data, never built.

    Lightning's ``hparams.yaml`` holds ``!!python/object:...`` dumps of config
    objects; a safe loader refuses them, so their fields would be lost.
    """
    import yaml

    try:
        return yaml.load(read_text(path), Loader=_plain_loader())
    except RecursionError:
        raise ReaderError(f"YAML nested deeper than Python can follow (over {MAX_DEPTH} levels)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise ReaderError(f"{where}invalid YAML ({getattr(err, 'problem', err)})") from None


@cache
def _plain_loader() -> type:
    """A SafeLoader that reads unknown tags as the plain mapping, list or scalar they wrap.

    Still safe: no tag ever constructs a Python object. Sets become lists so
    the result can be stored as JSON.
    """
    import yaml

    class PlainLoader(yaml.SafeLoader):
        def construct_document(self, node: yaml.Node) -> Any:
            _check_expansion(node)
            return super().construct_document(node)

    def plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            data = loader.construct_mapping(node, deep=True)
            inner = data.get("__dict__")  # a dumped object: its attributes are what matters
            return inner if isinstance(inner, dict) else data
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    def as_list(loader: yaml.SafeLoader, node: yaml.Node) -> list:
        return list(loader.construct_mapping(node))

    PlainLoader.add_multi_constructor("tag:yaml.org,2002:python/", plain)
    PlainLoader.add_multi_constructor("!", plain)
    PlainLoader.add_constructor("tag:yaml.org,2002:set", as_list)
    return PlainLoader


def _check_expansion(root) -> None:
    """Refuse a YAML document whose aliases expand to more than MAX_YAML_VALUES values.

    Aliases share one node, so the document is small until something walks it
    (flattening, storing as JSON): count the values it stands for, each node once.
    """
    sizes: dict[int, int] = {}
    pending: list[tuple[Any, bool]] = [(root, False)]
    while pending:
        node, done = pending.pop()
        key = id(node)
        children = _children(node)
        if done:
            sizes[key] = min(1 + sum(sizes.get(id(c), MAX_YAML_VALUES) for c in children),
                             MAX_YAML_VALUES + 1)
        elif key not in sizes:
            sizes[key] = MAX_YAML_VALUES + 1  # until counted: a node that contains itself is too big
            pending.append((node, True))
            pending.extend((c, False) for c in children if id(c) not in sizes)
    if sizes[id(root)] > MAX_YAML_VALUES:
        raise ReaderError(f"YAML aliases expand to more than {MAX_YAML_VALUES:,} values (an alias bomb?)")


def _children(node) -> list:
    value = node.value
    if not isinstance(value, list):
        return []
    return [part for item in value for part in (item if isinstance(item, tuple) else (item,))]


def number(value: Any) -> float | None:
    """A float from a JSON value: numbers, numeric strings ('2.105', 'nan'); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", "").strip())
        except ValueError:
            return None
    return None


def flatten(data: Any, prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """Nested dicts to one level with dotted keys; lists and scalars kept as values."""
    if not isinstance(data, dict):
        return {prefix: data} if prefix else {}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, name, sep))
        else:
            out[name] = value
    return out


def one_run(read: Callable[[Path], RunLog]) -> Callable[[Path], list[RunLog]]:
    """``read_runs`` of a format whose file or folder holds one run: its ``read``, as a list."""

    def read_runs(path: Path) -> list[RunLog]:
        return [read(path)]

    return read_runs
