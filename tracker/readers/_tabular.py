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
from tracker.readers._common import ReaderError, head, looks_binary, number, parse_json

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
# JSON lines shorter than this are parsed line by line in Python: importing pyarrow (and the
# pandas and pyarrow.compute its conversions load) takes longer than parsing them (~0.4 s).
SMALL_JSONL = 256 * 1024


@dataclass
class Column:
    """A numeric column: values, and which rows have one (NaN written on purpose stays)."""

    values: np.ndarray
    present: np.ndarray


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
    if len(data) < SMALL_JSONL:
        return rows_to_columns(jsonl_rows(data))
    table = _arrow_json(data)
    if table is None and not data.endswith(b"\n"):
        # A live log's half-written last line: parse the complete lines fast, as jsonl_rows would.
        table = _arrow_json(data[: data.rfind(b"\n") + 1])
    if table is None:
        return rows_to_columns(jsonl_rows(data))
    try:
        return _numeric_arrow_columns(table)
    except UnicodeDecodeError:  # pyarrow keeps invalid UTF-8 in text values as it found it
        return jsonl_columns(data.decode("utf-8", errors="replace").encode("utf-8"))


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


def jsonl_file_columns(path: Path) -> dict[str, Column]:
    """:func:`jsonl_columns` of a file, parsed in place (memory-mapped) when pyarrow takes it
    whole; a file it refuses is read for the line-by-line parse that names what is wrong."""
    _text_head(path, "JSON lines")
    if path.stat().st_size < SMALL_JSONL:
        return jsonl_columns(path.read_bytes())
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        table = _arrow_json(source)
    if table is not None:
        try:
            return _numeric_arrow_columns(table)
        except UnicodeDecodeError:
            pass  # invalid UTF-8 in text values: the bytes path replaces it
    return jsonl_columns(path.read_bytes())


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

    start = _text_head(path, "CSV")
    try:
        # Mapped, not read into a bytes object: pyarrow parses the page cache in place.
        with pa.memory_map(str(path)) as source:
            table = pc.read_csv(
                source,
                parse_options=pc.ParseOptions(delimiter=_delimiter(path, start)),
                # Empty and NA-style cells are missing; "nan" and "inf" written by the log are values.
                convert_options=pc.ConvertOptions(null_values=NULL_CELLS, strings_can_be_null=True),
            )
    except pa.ArrowInvalid as err:
        raise ReaderError(_csv_reason(str(err))) from None
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        column = _arrow_numeric(col)
        if column is not None:
            columns[name] = column
    return columns


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
        if not keep.any():
            continue
        wall = None
        if wall_time is not None and wall_time.present[keep].all():
            wall = wall_time.values[keep]
        run.add_series(name, steps.values[keep].astype(np.int64), col.values[keep], wall)
    return run


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
    stated = Column(raw.values, raw.present & np.isfinite(raw.values))
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
    return Column(steps.values[index], np.ones(len(index), bool))
