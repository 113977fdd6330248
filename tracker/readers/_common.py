"""Helpers every reader shares: bounded head reads, friendly JSON/YAML errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

HEAD_BYTES = 64 * 1024


class ReaderError(Exception):
    """A file a reader cannot use; the message is one line a person understands."""


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
    """Parse a YAML file safely (no Python object tags)."""
    import yaml

    try:
        return yaml.safe_load(read_text(path))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise ReaderError(f"{where}invalid YAML ({getattr(err, 'problem', err)})") from None


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
