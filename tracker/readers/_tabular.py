"""Vectorised parsing of line-per-record logs (JSONL, CSV) into series.

pyarrow parses the whole file in C; only when it refuses (NaN literals, a type
that changes mid-file, a broken line) does a line-by-line parse take over, which
is slower but names the exact line that is wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.runlog import RunLog
from tracker.readers._common import ReaderError, looks_binary, number, parse_json

# Column names that count the optimizer step, most specific first.
STEP_COLUMNS = (
    "step", "global_step", "_step", "trainer/global_step", "train/global_step", "iteration",
    "iter", "current_steps", "steps", "Step", "num_updates",
)


@dataclass
class Column:
    """A numeric column: values, and which rows have one (NaN written on purpose stays)."""

    values: np.ndarray
    present: np.ndarray


def jsonl_rows(data: bytes, first_line: int = 1) -> list[dict[str, Any]]:
    """Parse JSON lines one by one, so an error names its line.

    A last line without a newline that does not parse is taken as still being
    written and left out; any other bad line is an error.
    """
    lines = data.split(b"\n")
    rows = []
    for number_, raw in enumerate(lines, start=first_line):
        raw = raw.strip()
        if not raw:
            continue
        try:
            value = parse_json(raw.decode("utf-8", errors="replace"))
        except ReaderError as err:
            is_last = number_ == first_line + len(lines) - 1
            if is_last and not data.endswith(b"\n"):
                break
            raise ReaderError(f"line {number_}: {str(err).split(': ', 1)[-1]}") from None
        if not isinstance(value, dict):
            raise ReaderError(f"line {number_}: expected a JSON object, found {type(value).__name__}")
        rows.append(value)
    return rows


def jsonl_columns(data: bytes, first_line: int = 1) -> dict[str, Column]:
    """Numeric columns of a JSON-lines byte string, NaN where a row lacks the key.

    Nested objects are flattened with "/" (``{"eval": {"loss": 1}}`` gives
    ``eval/loss``). Non-numeric columns are left out.
    """
    if looks_binary(data[:65536]):
        raise ReaderError("binary data, not JSON lines")
    table = _arrow_json(data)
    if table is not None:
        return _numeric_arrow_columns(table)
    return rows_to_columns(jsonl_rows(data, first_line))


def rows_to_columns(rows: list[dict[str, Any]]) -> dict[str, Column]:
    """Numeric columns from parsed rows (flattening nested objects with "/")."""
    columns: dict[str, Column] = {}
    n = len(rows)
    for i, row in enumerate(rows):
        for key, value in _flat_items(row):
            x = number(value)
            if x is None:
                continue
            col = columns.get(key)
            if col is None:
                col = columns[key] = Column(np.full(n, np.nan), np.zeros(n, dtype=bool))
            col.values[i] = x
            col.present[i] = True
    return columns


def _flat_items(row: dict[str, Any], prefix: str = ""):
    for key, value in row.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _flat_items(value, name)
        else:
            yield name, value


def _arrow_json(data: bytes):
    """pyarrow's parse of JSON lines, or None when it refuses the input."""
    import pyarrow as pa
    import pyarrow.json as pj

    if not data.strip():
        return None
    try:
        return pj.read_json(
            pa.py_buffer(data),
            read_options=pj.ReadOptions(block_size=1 << 22),
            parse_options=pj.ParseOptions(newlines_in_values=False),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numeric_arrow_columns(table) -> dict[str, Column]:
    import pyarrow as pa

    table = table.flatten()
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        column = _arrow_numeric(col)
        if column is not None:
            columns[name.replace(".", "/")] = column
    return columns


def _arrow_numeric(col) -> Column | None:
    """A pyarrow column as a numeric Column, or None when it holds no numbers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        floats = col.cast(pa.float64())
    elif pa.types.is_string(col.type) and _all_numeric(col):
        # Newer HF versions write '2.105'; thousands separators appear in console exports.
        floats = pc.cast(pc.replace_substring(col, ",", ""), pa.float64(), safe=False)
    else:
        return None
    present = floats.is_valid().to_numpy(zero_copy_only=False)
    return Column(floats.fill_null(math.nan).to_numpy(zero_copy_only=False), present)


def _all_numeric(col) -> bool:
    values = col.drop_null().to_pylist()[:50]
    return bool(values) and all(number(v) is not None for v in values)


def csv_columns(path: Path) -> dict[str, Column]:
    """Numeric columns of a CSV/TSV file (empty cells are NaN), with a named error."""
    import pyarrow as pa
    import pyarrow.csv as pc

    data = path.read_bytes()
    if not data.strip():
        raise ReaderError("empty file")
    if looks_binary(data[:65536]):
        raise ReaderError("binary data, not CSV")
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        table = pc.read_csv(
            pa.py_buffer(data),
            parse_options=pc.ParseOptions(delimiter=delimiter),
            convert_options=pc.ConvertOptions(strings_can_be_null=True),
        )
    except pa.ArrowInvalid as err:
        raise ReaderError(_csv_reason(str(err))) from None
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        column = _arrow_numeric(col)
        if column is not None:
            columns[name] = column
    return columns


def _csv_reason(message: str) -> str:
    # pyarrow: "CSV parse error: Expected 3 columns, got 5: ..." -> a short, line-free reason
    first = message.splitlines()[0]
    return first.replace("CSV parse error: ", "malformed CSV: ")[:160]


def step_column(columns: dict[str, Column]) -> str | None:
    """The column that counts steps, if one has a recognised name."""
    lowered = {name.lower(): name for name in columns}
    for candidate in STEP_COLUMNS:
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None


def add_columns(
    run: RunLog,
    columns: dict[str, Column],
    steps: Column,
    skip: set[str] | None = None,
    wall_time: Column | None = None,
) -> RunLog:
    """Add each column as a series, keeping the rows where it has a value and a step.

    A NaN the log wrote is kept (it is present); an empty cell is not a point.
    """
    skip = skip or set()
    for name, col in columns.items():
        if name in skip:
            continue
        keep = steps.present & col.present
        if not keep.any():
            continue
        wall = None
        if wall_time is not None and wall_time.present[keep].all():
            wall = wall_time.values[keep]
        run.add_series(name, steps.values[keep].astype(np.int64), col.values[keep], wall)
    return run
