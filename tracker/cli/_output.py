"""Printing for the command line: JSON that scripts can rely on, tables for people."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracker.store import Store

# Control characters, and the bidirectional marks that reorder a line on screen: a file named
# "a\nfake row" or "\u202eexe.pt" must not forge the table it is printed in.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def open_store(url: str | None) -> Store:
    """The store for ``--db`` (or the default), with a one-line error on failure."""
    from tracker.db.engine import SchemaError
    from tracker.store import Store

    try:
        return Store(url)
    except SchemaError as err:
        fail(str(err))
    except Exception as err:  # a bad URL or an unreachable server
        fail(f"cannot open database {url or ''}: {str(err).splitlines()[0]}")
    raise AssertionError("unreachable")


def fail(message: str, code: int = 1) -> None:
    print(f"headroom: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def find_run(store: Store, ref: str):
    from tracker.store import RunNotFound

    try:
        return store.find_run(ref)
    except RunNotFound as err:
        fail(str(err))


def clean(value: Any) -> Any:
    """Replace NaN and Inf by None, recursively, so the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def print_json(value: Any) -> None:
    json.dump(clean(value), sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")


def printable(text: str) -> str:
    """``text`` with control and direction characters escaped, as Python writes them."""
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name, as Python keeps it
        return f"\\x{code - 0xDC00:02x}"
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    return printable(str(value))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
