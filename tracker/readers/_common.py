"""Helpers every reader shares: bounded head reads, friendly JSON/YAML errors."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

HEAD_BYTES = 64 * 1024
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


def file_run_name(path: Path) -> str:
    """A run name for a lone log file: its stem, with its folder when the stem is generic."""
    if path.stem.lower() in GENERIC_STEMS and path.parent.name:
        folder = path.parent
        if folder.name in GENERIC_FOLDERS and folder.parent.name:
            folder = folder.parent
        return f"{folder.name}/{path.stem}"
    return path.stem


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of a file (empty for folders and unreadable files)."""
    try:
        with open(path, "rb") as f:
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
    data = path.read_bytes()
    if not data.strip():
        raise ReaderError("empty file")
    if looks_binary(data[:HEAD_BYTES]):
        raise ReaderError("binary data, not a text log")
    return data.decode("utf-8", errors="replace")


def load_json(path: Path) -> Any:
    """Parse a JSON document with an error that names the line and what is wrong."""
    return parse_json(read_text(path))


def parse_json(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) - 1 or "Unterminated string" in err.msg:
            raise ReaderError(f"line {err.lineno}: truncated JSON") from None
        raise ReaderError(f"line {err.lineno} column {err.colno}: invalid JSON ({err.msg})") from None


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
        pass

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
