"""Small CSV tables parsed in Python: importing pyarrow (and the pandas its conversions load)
takes longer than parsing them.

Only tables pyarrow would read the same way are taken: rows as wide as the
header, and every cell a missing value, a plain integer or a plain decimal.
Anything else (text cells, dates, quoted newlines, ragged rows, bad UTF-8) is
left to pyarrow, whose typing rules and error messages stay the reference.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np

from tracker.readers._tabular import NULL_CELLS, STEP_RANGE, Column

# Files smaller than this are parsed here (the same bound as small JSON-lines logs).
SMALL_CSV = 256 * 1024
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z|-?inf\Z|nan\Z")
_NULLS = frozenset(NULL_CELLS)


class _NotPlain(Exception):
    """A cell pyarrow might type or parse differently: the table is left to it."""


def small_csv(path: Path, delimiter: str) -> tuple[dict[str, Column], int] | None:
    """The numeric columns and the row count of a small plain table, or None to use pyarrow."""
    if path.stat().st_size >= SMALL_CSV:
        return None
    try:
        text = path.read_bytes().decode("utf-8")
        rows = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if row]
        if len(rows) < 2 or any(len(row) != len(rows[0]) or "\n" in "".join(row) for row in rows):
            return None
        body = rows[1:]
        columns = {name: _column([row[i] for row in body]) for i, name in enumerate(rows[0])}
    except (UnicodeDecodeError, csv.Error, _NotPlain):
        return None
    return {name: column for name, column in columns.items() if column is not None}, len(body)


def _column(cells: list[str]) -> Column | None:
    """A column as pyarrow types it: int64 when every value is an integer, else float64;
    None when every cell is missing (pyarrow's null type holds no numbers)."""
    present = np.array([cell not in _NULLS for cell in cells], dtype=bool)
    found = [cell for cell in cells if cell not in _NULLS]
    if not found:
        return None
    if all(_INT.match(cell) for cell in found):
        numbers = [int(cell) for cell in found]
        if not all(STEP_RANGE[0] <= n <= STEP_RANGE[1] for n in numbers):
            raise _NotPlain
        values = np.zeros(len(cells), dtype=np.int64)
    elif all(_FLOAT.match(cell) for cell in found):
        numbers = [float(cell) for cell in found]
        values = np.full(len(cells), math.nan)
    else:
        raise _NotPlain
    values[present] = numbers
    return Column(values, present)
