"""Vectorised parsing of line-per-record logs (JSONL, CSV) into series.

pyarrow parses the whole file in C; only when it refuses (NaN literals, a type
that changes mid-file, a broken line) does a line-by-line parse take over, which
is slower but names the exact line that is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from core.runlog import RunLog
from tracker.readers._common import (
    ReaderError,
    check_depth,
    check_file_depth,
    head,
    looks_binary,
    number,
    open_regular,
    parse_json,
    read_regular,
)

# Column names that count the optimizer step, most specific first.
STEP_COLUMNS = (
    "step", "global_step", "_step", "trainer/global_step", "train/global_step", "iteration",
    "iter", "current_steps", "steps", "Step", "num_updates",
)
# Columns that may hold the wall-clock time of a row (used only when they hold epoch times).
WALL_COLUMNS = ("wall_time", "_timestamp", "timestamp", "wall time", "time")
# CSV cells that mean "no value". Not "nan"/"inf": a log that wrote those meant them.
NULL_CELLS = ["", "NA", "N/A", "null", "NULL", "None"]
NO_STEP = "no step column (step, iteration, ...): the row number is used as the step"
# Steps are stored as 64-bit integers.
STEP_RANGE = (-(2**63), 2**63 - 1)
# A table this wide is no training log (and its header alone outgrows every sniffer's head).
MAX_COLUMNS = 10_000
# A text cell that is a number, as logs write them (thousands separators, nan, inf).
_NUMBER = (r"^\s*[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
           r"|^\s*[-+]?(nan|inf|infinity)\s*$")
# JSON lines shorter than this are parsed line by line in Python: importing pyarrow (and the
# pandas and pyarrow.compute its conversions load) takes longer than parsing them (~0.4 s).
SMALL_JSONL = 256 * 1024


@dataclass
class Column:
    """A numeric column: values, and which rows have one (NaN written on purpose stays).

    Whole-number columns stay int64, so steps near 2**63 keep every digit. ``bad``
    counts text cells that were no number (missing points), the first at row
    ``first_bad``; ``line_of`` turns a row into its line in the file.
    """

    values: np.ndarray
    present: np.ndarray
    bad: int = 0
    first_bad: int = -1
    line_of: Callable[[int], int] | None = None


def jsonl_rows(data: bytes) -> list[dict[str, Any]]:
    """Parse JSON lines one by one, so an error names its line.

    A last line without a newline that does not parse is taken as still being
    written and left out; any other bad line is an error.
    """
    lines = data.split(b"\n")
    rows = []
    for number_, raw in enumerate(lines, start=1):
        raw = raw.strip()
        if not raw:
            continue
        try:
            value = parse_json(raw.decode("utf-8", errors="replace"))
        except ReaderError as err:
            is_last = number_ == len(lines)
            if is_last and not data.endswith(b"\n"):
                break
            raise ReaderError(f"line {number_}: {str(err).split(': ', 1)[-1]}") from None
        if not isinstance(value, dict):
            raise ReaderError(f"line {number_}: expected a JSON object, found {type(value).__name__}")
        rows.append(value)
    return rows


def jsonl_columns(data: bytes) -> dict[str, Column]:
    """Numeric columns of a JSON-lines byte string, NaN where a row lacks the key.

    Nested objects are flattened with "/" (``{"eval": {"loss": 1}}`` gives
    ``eval/loss``). Non-numeric columns are left out.
    """
    if looks_binary(data[:65536]):
        raise ReaderError("binary data, not JSON lines")
    check_depth(data)
    if len(data) < SMALL_JSONL:
        return _with_lines(rows_to_columns(jsonl_rows(data)), lambda row: jsonl_line(data, row))
    table = _arrow_json(data)
    if table is None and not data.endswith(b"\n"):
        # A live log's half-written last line: parse the complete lines fast, as jsonl_rows would.
        table = _arrow_json(data[: data.rfind(b"\n") + 1])
    if table is None:
        return _with_lines(rows_to_columns(jsonl_rows(data)), lambda row: jsonl_line(data, row))
    try:
        columns = _numeric_arrow_columns(table)
    except UnicodeDecodeError:  # pyarrow keeps invalid UTF-8 in text values as it found it
        return jsonl_columns(data.decode("utf-8", errors="replace").encode("utf-8"))
    return _with_lines(columns, lambda row: jsonl_line(data, row))


def jsonl_line(data: bytes, row: int) -> int:
    """The line (from 1) of the ``row``-th object of JSON lines (blank lines hold none)."""
    seen = -1
    for number_, raw in enumerate(data.split(b"\n"), start=1):
        seen += bool(raw.strip())
        if seen == row:
            return number_
    return number_


def _with_lines(columns: dict[str, Column], line_of: Callable[[int], int]) -> dict[str, Column]:
    for column in columns.values():
        column.line_of = line_of
    return columns


def rows_to_columns(rows: list[dict[str, Any]]) -> dict[str, Column]:
    """Numeric columns from parsed rows (flattening nested objects with "/").

    Whole numbers stay exact; a text value that is no number is a missing point,
    counted, in a column that otherwise holds numbers.
    """
    cells: dict[str, dict[int, int | float]] = {}
    text: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for key, value in _flat_items(row):
            x = _exact(value)
            if x is not None:
                cells.setdefault(key, {})[i] = x
            elif isinstance(value, str) and value.strip():
                text.setdefault(key, []).append(i)
    return {key: _column(found, len(rows), text.get(key, [])) for key, found in cells.items()}


def _exact(value: Any) -> int | float | None:
    """An int as it is (exactly), else :func:`number`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return number(value)


def _column(found: dict[int, int | float], n: int, text_rows: list[int]) -> Column:
    rows = np.fromiter(found, dtype=np.int64, count=len(found))
    present = np.zeros(n, dtype=bool)
    present[rows] = True
    values = list(found.values())
    low, high = STEP_RANGE
    if all(type(v) is int and low <= v <= high for v in values):
        column = np.zeros(n, dtype=np.int64)
        column[rows] = values
    else:
        column = np.full(n, np.nan)
        column[rows] = [_as_float(v) for v in values]
    return Column(column, present, len(text_rows), text_rows[0] if text_rows else -1)


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer past 1e308
        return math.inf if value > 0 else -math.inf


def _flat_items(row: dict[str, Any], prefix: str = ""):
    for key, value in row.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _flat_items(value, name)
        else:
            yield name, value


def jsonl_file_columns(path: Path) -> dict[str, Column]:
    """:func:`jsonl_columns` of a file, parsed in place (memory-mapped) when pyarrow takes it
    whole; a file it refuses is read for the line-by-line parse that names what is wrong."""
    _text_head(path, "JSON lines")
    if path.stat().st_size < SMALL_JSONL:
        return jsonl_columns(path.read_bytes())
    import pyarrow as pa

    check_file_depth(path)
    with pa.memory_map(str(path)) as source:
        table = _arrow_json(source)
    if table is not None:
        try:
            columns = _numeric_arrow_columns(table)
        except UnicodeDecodeError:
            pass  # invalid UTF-8 in text values: the bytes path replaces it
        else:
            return _with_lines(columns, lambda row: jsonl_line(read_regular(path), row))
    return jsonl_columns(read_regular(path))


def _arrow_json(data):
    """pyarrow's parse of JSON lines (bytes or an open pyarrow file), or None when it refuses."""
    import pyarrow as pa
    import pyarrow.json as pj

    if isinstance(data, bytes | bytearray):
        if not data or data.isspace():
            return None
        data = pa.py_buffer(data)
    try:
        return pj.read_json(
            data,
            read_options=pj.ReadOptions(block_size=1 << 22),
            parse_options=pj.ParseOptions(newlines_in_values=False),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numeric_arrow_columns(table) -> dict[str, Column]:
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        for leaf, values in _arrow_leaves(name, col):
            column = _arrow_numeric(values)
            if column is not None:
                columns[leaf] = column
    return columns


def _arrow_leaves(name: str, col):
    """Leaf columns of nested objects, named ``outer/inner``; dots inside keys stay dots."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_struct(col.type):
        yield name, col
        return
    for i in range(col.type.num_fields):
        yield from _arrow_leaves(f"{name}/{col.type.field(i).name}", pc.struct_field(col, [i]))


def _arrow_numeric(col) -> Column | None:
    """A pyarrow column as a numeric Column, or None when it holds no numbers.

    Integers stay int64 (unsigned ones past 2**63 become floats, so a step out
    of range is seen); text that is mostly numbers (newer HF writes '2.105')
    keeps its numbers, and its other cells are counted missing points.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    bad, first_bad = 0, -1
    if pa.types.is_integer(col.type):
        fits = not pa.types.is_uint64(col.type) or (pc.max(col).as_py() or 0) <= STEP_RANGE[1]
        numbers = col.cast(pa.int64() if fits else pa.float64())
    elif pa.types.is_floating(col.type):
        numbers = col.cast(pa.float64())
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        found = _text_numbers(col)
        if found is None:
            return None
        numbers, bad, first_bad = found
    else:
        return None
    present = numbers.is_valid().to_numpy(zero_copy_only=False)
    fill = 0 if pa.types.is_integer(numbers.type) else math.nan
    return Column(numbers.fill_null(fill).to_numpy(zero_copy_only=False), present, bad, first_bad)


def _text_numbers(col):
    """Numbers of a text column whose non-empty cells are mostly numbers: (floats, bad, first bad)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    valid = pc.count(col).as_py()
    numeric = pc.fill_null(pc.match_substring_regex(col, _NUMBER, ignore_case=True), False)
    found = pc.sum(numeric).as_py() or 0
    if not found or 2 * found < valid:
        return None
    cleaned = pc.if_else(numeric, pc.replace_substring(col, ",", ""), pa.scalar(None, col.type))
    floats = pc.cast(cleaned, pa.float64(), safe=False)
    bad_rows = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False)
                              & ~numeric.to_numpy(zero_copy_only=False))
    return floats, len(bad_rows), int(bad_rows[0]) if len(bad_rows) else -1


def csv_columns(path: Path) -> dict[str, Column]:
    """Numeric columns of a CSV/TSV file (empty cells are NaN), with a named error."""
    import pyarrow as pa
    import pyarrow.csv as pc

    start = _text_head(path, "CSV")
    delimiter = _delimiter(path, start)
    try:
        # Mapped, not read into a bytes object: pyarrow parses the page cache in place.
        with pa.memory_map(str(path)) as source:
            table = pc.read_csv(
                source,
                read_options=_csv_header(path, start, delimiter),
                parse_options=pc.ParseOptions(delimiter=delimiter),
                # Empty and NA-style cells are missing; "nan" and "inf" written by the log are values.
                convert_options=pc.ConvertOptions(null_values=NULL_CELLS, strings_can_be_null=True),
            )
    except pa.ArrowInvalid as err:
        raise ReaderError(_csv_reason(str(err))) from None
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        column = _arrow_numeric(col)
        if column is not None:
            column.line_of = _csv_line
            columns[name] = column
    return columns


def _csv_line(row: int) -> int:
    return row + 2  # the header is line 1


def _csv_header(path: Path, start: bytes, delimiter: str):
    """Read options: the header's names decoded here when they are not valid UTF-8 (pyarrow
    would raise), and a named error for a table too wide to be a log."""
    import csv
    import io

    import pyarrow.csv as pc

    line = start.split(b"\n", 1)[0] if b"\n" in start else _first_line(path)
    if line.count(delimiter.encode()) >= MAX_COLUMNS:
        raise ReaderError(f"{line.count(delimiter.encode()) + 1:,} columns: more than the "
                          f"{MAX_COLUMNS:,} a log table may have")
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        names = next(csv.reader(io.StringIO(text), delimiter=delimiter))
        return pc.ReadOptions(column_names=names, skip_rows=1)
    return pc.ReadOptions()


def _first_line(path: Path, limit: int = 64 << 20) -> bytes:
    with open_regular(path) as f:
        return f.readline(limit)


def _text_head(path: Path, what: str) -> bytes:
    """The file's first 64 KiB, once empty and binary files are refused with a named error."""
    start = head(path, 65536)
    if not start.strip() and path.stat().st_size <= len(start):
        raise ReaderError("empty file")
    if looks_binary(start):
        raise ReaderError(f"binary data, not {what}")
    return start


def _delimiter(path: Path, data: bytes) -> str:
    """Tab for .tsv files and for headers that use tabs (or semicolons) instead of commas."""
    header = data[:4096].split(b"\n", 1)[0]
    if path.suffix.lower() == ".tsv" or header.count(b"\t") > header.count(b","):
        return "\t"
    return ";" if header.count(b";") > header.count(b",") else ","


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
        if col.bad:
            run.warnings.append(f"{name}: {col.bad} non-numeric cell(s) taken as missing "
                                f"(first on {_where(col, col.first_bad)})")
        if not keep.any():
            continue
        wall = None
        if wall_time is not None and wall_time.present[keep].all():
            wall = wall_time.values[keep]
        run.add_series(name, _steps(steps)[keep], col.values[keep], wall)
    return run


def _steps(steps: Column) -> np.ndarray:
    """The steps as int64; one outside that range is an error naming its line, never wrapped."""
    values = steps.values
    if values.dtype.kind != "f":
        return values.astype(np.int64)
    low, high = STEP_RANGE
    outside = np.flatnonzero(steps.present & ((values < low) | (values >= 2.0**63)))
    if len(outside):
        row = int(outside[0])
        shown = f"{values[row]:.0f}" if math.isfinite(values[row]) else str(values[row])
        raise ReaderError(f"{_where(steps, row)}: step {shown} is outside the 64-bit range "
                          f"steps are stored in ({low:,} to {high:,})")
    return values.astype(np.int64)


def _where(col: Column, row: int) -> str:
    return f"line {col.line_of(row)}" if col.line_of else f"row {row + 1}"


def add_table(run: RunLog, columns: dict[str, Column], step: str | None = None) -> RunLog:
    """A generic table's numeric columns as series of ``run``.

    The step is ``step`` or else the first column with a step-like name that
    most rows carry; rows without one take the step of the row before (an eval
    line), and metrics that only appear after the last step (a final summary
    line) go to the summary. With no step column the row number is the step,
    and the run says so in a warning.
    """
    if not columns:
        raise ReaderError("no numeric columns")
    step_name = step or _dense_step_column(columns)
    wall_name = wall_column(columns, exclude=step_name)
    metrics = {k: c for k, c in columns.items() if k not in (step_name, wall_name)}
    if not metrics:
        raise ReaderError(f"no numeric columns besides {step_name or wall_name!r}")
    wall = None if wall_name is None else _epoch_seconds(columns[wall_name])
    if step_name is None:
        n = len(next(iter(columns.values())).values)
        run.warnings.append(NO_STEP)
        return add_columns(run, metrics, Column(np.arange(n, dtype=np.float64), np.ones(n, bool)),
                           wall_time=wall)
    raw = columns[step_name]
    stated = replace(raw, present=raw.present & np.isfinite(raw.values))
    after_last = np.arange(len(raw.values)) > np.flatnonzero(stated.present).max(initial=-1)
    for name, col in list(metrics.items()):
        if col.present.any() and after_last[col.present].all():
            run.summary[name] = float(col.values[col.present][-1])
            del metrics[name]
    return add_columns(run, metrics, carried(stated), wall_time=wall)


def _dense_step_column(columns: dict[str, Column]) -> str | None:
    """The step column, if it is on most rows (not a step written once on a final line)."""
    name = step_column(columns)
    return name if name is not None and columns[name].present.mean() >= 0.5 else None


def wall_column(columns: dict[str, Column], exclude: str | None = None) -> str | None:
    """The column holding each row's epoch time (seconds or milliseconds), if any."""
    lowered = {name.lower(): name for name in columns if name != exclude}
    for candidate in WALL_COLUMNS:
        name = lowered.get(candidate)
        if name is not None and _epoch_seconds(columns[name]) is not None:
            return name
    return None


def _epoch_seconds(col: Column) -> Column | None:
    """Epoch times in seconds (milliseconds are scaled), or None for other numbers."""
    values = col.values[col.present]
    if len(values) == 0 or not np.isfinite(values).all():
        return None
    if (values > 1e8).all() and (values < 1e11).all():
        return col
    if (values > 1e11).all() and (values < 1e14).all():
        return Column(col.values / 1000.0, col.present)
    return None


def carried(steps: Column) -> Column:
    """Steps with each gap filled from the row before (leading gaps from the first step)."""
    if steps.present.all() or not steps.present.any():
        return steps
    index = np.where(steps.present, np.arange(len(steps.values)), -1)
    np.maximum.accumulate(index, out=index)
    index[index < 0] = int(np.argmax(steps.present))
    return replace(steps, values=steps.values[index], present=np.ones(len(index), bool))
