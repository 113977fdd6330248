"""Vectorised parsing of line-per-record logs (JSONL, CSV) into numeric columns.

pyarrow parses in C; only when it refuses (NaN literals, a type that changes
mid-file, a broken line) does a line-by-line parse take over, which is slower
but names the exact line that is wrong. A big file is parsed a block of whole
lines at a time (:func:`json_lines_blocks`, :func:`csv_blocks`), for
:mod:`tracker.readers._table` to turn into series in bounded memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tracker.readers import _common
from tracker.readers._common import (
    ReaderError,
    check_depth,
    head,
    looks_binary,
    number,
    open_regular,
    parse_json,
)

if TYPE_CHECKING:
    from tracker.readers._table import Block

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
    ``first_bad``; ``line_of`` turns a row into its line in the file. A column
    pyarrow typed as text has ``text_cells`` (its non-null cells): its numbers
    count only if they are most of them, judged over the whole file (:func:`decided`).
    """

    values: np.ndarray
    present: np.ndarray
    bad: int = 0
    first_bad: int = -1
    line_of: Callable[[int], int] | None = None
    text_cells: int | None = None


def decided(columns: dict[str, Column]) -> dict[str, Column]:
    """The numeric columns of a whole file: those with numbers, and text columns only where
    most cells are."""
    out = {}
    for name, col in columns.items():
        found = int(col.present.sum())
        if found and (col.text_cells is None or 2 * found >= col.text_cells):
            out[name] = replace(col, text_cells=None)
    return out


def jsonl_rows(data: bytes, first_line: int = 1) -> list[dict[str, Any]]:
    """Parse JSON lines one by one, so an error names its line (``data`` starts at ``first_line``).

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


def jsonl_columns(data: bytes) -> dict[str, Column]:
    """Numeric columns of a JSON-lines byte string, NaN where a row lacks the key.

    Nested objects are flattened with "/" (``{"eval": {"loss": 1}}`` gives
    ``eval/loss``). Non-numeric columns are left out.
    """
    if looks_binary(data[:65536]):
        raise ReaderError("binary data, not JSON lines")
    block = json_block(data, 1, python=len(data) < SMALL_JSONL)
    return _with_lines(decided(block.columns), lambda row: jsonl_line(data, row))


def json_block(data: bytes, first_line: int, python: bool) -> Block:
    """A block of JSON lines (whole lines, from ``first_line``): its candidate columns.

    pyarrow parses it unless ``python``; when it refuses, the block is parsed line
    by line, which names a broken line.
    """
    from tracker.readers._table import Block

    check_depth(data, first_line)
    table = None if python else _arrow_json(data)
    if table is None and not python and not data.endswith(b"\n"):
        # A live log's half-written last line: parse the complete lines fast, as jsonl_rows would.
        table = _arrow_json(data[: data.rfind(b"\n") + 1])
    if table is None:
        rows = jsonl_rows(data, first_line)
        return Block(rows_to_columns(rows, text_only=True), len(rows), python=True)
    try:
        columns = _numeric_arrow_columns(table)
    except UnicodeDecodeError:  # pyarrow keeps invalid UTF-8 in text values as it found it
        return json_block(bytes(data).decode("utf-8", errors="replace").encode("utf-8"), first_line,
                          python)
    return Block(columns, table.num_rows, kinds=dict(_kinds(table.schema)))


def json_lines_blocks(path: Path, prepare: Callable[[bytearray, int], None] | None = None
                      ) -> Callable[[bool], Iterator[Block]]:
    """The blocks of a JSON-lines file, as :func:`tracker.readers._table.read_table` reads them.

    ``prepare(block, offset)`` may blank lines that are no rows (Headroom's records)
    in place; a row's line is found again, when a warning names it, the same way.
    """
    _text_head(path, "JSON lines")
    small = path.stat().st_size < SMALL_JSONL

    def blocks(python: bool) -> Iterator[Block]:
        for data, offset, line in line_blocks(path):
            if prepare is not None:
                prepare(data, offset)
            block = json_block(data, line, python or small)
            block.line_of = _line_finder(path, offset, len(data), line, prepare)
            yield block

    return blocks


def _line_finder(path: Path, offset: int, size: int, line: int,
                 prepare: Callable[[bytearray, int], None] | None) -> Callable[[int], int]:
    """A row's line in a block, read again from the file (only a warning or an error asks)."""
    def line_of(row: int) -> int:
        with open_regular(path) as f:
            f.seek(offset)
            data = bytearray(f.read(size))
        if prepare is not None:
            prepare(data, offset)
        return line - 1 + jsonl_line(data, row)

    return line_of


def line_blocks(path: Path) -> Iterator[tuple[bytearray, int, int]]:
    """A text file a block of whole lines at a time (the last may end without a newline):
    (block, its byte offset, the number of its first line). A file of up to
    ``BLOCK_BYTES`` is one block; a line longer than that is read whole."""
    size = _common.BLOCK_BYTES
    with open_regular(path) as f:
        data, offset, line = bytearray(f.read(size)), 0, 1
        while more := f.read(size):
            cut = data.rfind(b"\n") + 1
            if cut:
                yield data[:cut], offset, line
                line += data.count(b"\n", 0, cut)
                offset += cut
                del data[:cut]
            data += more
        if data:
            yield data, offset, line


def jsonl_line(data: bytes, row: int) -> int:
    """The line (from 1) of the ``row``-th object of JSON lines (blank lines hold none)."""
    seen = -1
    for number_, raw in enumerate(data.split(b"\n"), start=1):
        seen += bool(raw.strip())
        if seen == row:
            return number_
    return number_


def _with_lines(columns: dict[str, Column], line_of: Callable[[int], int] | None) -> dict[str, Column]:
    for column in columns.values():
        column.line_of = line_of
    return columns


def rows_to_columns(rows: list[dict[str, Any]], text_only: bool = False) -> dict[str, Column]:
    """Numeric columns from parsed rows (flattening nested objects with "/").

    Whole numbers stay exact; a text value that is no number is a missing point,
    counted, in a column that otherwise holds numbers. ``text_only`` adds the keys
    that hold only text here, pointless, for a block whose file has numbers under
    them elsewhere.
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
    columns = {key: _column(found, len(rows), text.get(key, [])) for key, found in cells.items()}
    if text_only:
        for key in (k for k in text if k not in cells):
            columns[key] = Column(np.full(len(rows), np.nan), np.zeros(len(rows), bool),
                                  len(text[key]), text[key][0])
    return columns


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
            read_options=pj.ReadOptions(block_size=1 << 21),  # a block parses in two, in parallel
            parse_options=pj.ParseOptions(newlines_in_values=False),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _kinds(schema, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Each JSON field's kind as pyarrow typed it ("number", "text", "bool", "struct"...);
    a field of two kinds in two blocks is one pyarrow refuses in a whole file."""
    import pyarrow as pa

    for item in schema:
        name, kind = f"{prefix}{item.name}", item.type
        if pa.types.is_struct(kind):
            yield name, "struct"
            yield from _kinds(kind, f"{name}/")
        elif not pa.types.is_null(kind):
            number_ = pa.types.is_integer(kind) or pa.types.is_floating(kind)
            text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
            yield name, "number" if number_ else "text" if text else str(kind)


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
    of range is seen); a text column (newer HF writes '2.105') gives its numbers,
    its other cells counted as missing points, for :func:`decided` to keep when
    they are most of its cells.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    bad, first_bad, cells = 0, -1, None
    if pa.types.is_integer(col.type):
        fits = not pa.types.is_uint64(col.type) or (pc.max(col).as_py() or 0) <= STEP_RANGE[1]
        numbers = col.cast(pa.int64() if fits else pa.float64())
    elif pa.types.is_floating(col.type):
        numbers = col.cast(pa.float64())
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        numbers, bad, first_bad, cells = _text_numbers(col)
    else:
        return None
    present = numbers.is_valid().to_numpy(zero_copy_only=False)
    fill = 0 if pa.types.is_integer(numbers.type) else math.nan
    return Column(numbers.fill_null(fill).to_numpy(zero_copy_only=False), present, bad, first_bad,
                  text_cells=cells)


def _text_numbers(col):
    """The numbers of a text column: (floats, cells that are none, the first of them, non-null cells)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    numeric = pc.fill_null(pc.match_substring_regex(col, _NUMBER, ignore_case=True), False)
    cleaned = pc.if_else(numeric, pc.replace_substring(col, ",", ""), pa.scalar(None, col.type))
    floats = pc.cast(cleaned, pa.float64(), safe=False)
    bad_rows = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False)
                              & ~numeric.to_numpy(zero_copy_only=False))
    return floats, len(bad_rows), int(bad_rows[0]) if len(bad_rows) else -1, pc.count(col).as_py()


def csv_columns(path: Path) -> dict[str, Column]:
    """Numeric columns of a whole CSV/TSV file (empty cells are NaN), with a named error."""
    start = _text_head(path, "CSV")
    delimiter = _delimiter(path, start)
    small = _small_table(path, start, delimiter)
    if small is not None:
        return _with_lines(decided(small[0]), _csv_line)
    import pyarrow as pa

    # Mapped, not read into a bytes object: pyarrow parses the page cache in place.
    with pa.memory_map(str(path)) as source:
        table = _csv_table(source, _csv_header(path, start, delimiter), delimiter)
    return _with_lines(decided(_csv_numeric(table)), _csv_line)


def csv_blocks(path: Path) -> Callable[[bool], Iterator[Block]]:
    """The blocks of a CSV/TSV file, as :func:`tracker.readers._table.read_table` reads them:
    the first with the header, the others with its names."""
    from tracker.readers._table import Block

    start = _text_head(path, "CSV")
    delimiter = _delimiter(path, start)
    small = _small_table(path, start, delimiter)
    if small is not None:
        return lambda _python: iter([Block(small[0], small[1], _csv_line)])
    import pyarrow as pa
    import pyarrow.csv as pc

    header = _csv_header(path, start, delimiter)

    def blocks(_python: bool) -> Iterator[Block]:
        options, rows = header, 0
        for data, _offset, _line in line_blocks(path):
            table = _csv_table(pa.py_buffer(data), options, delimiter)
            options = pc.ReadOptions(column_names=table.column_names)
            yield Block(_csv_numeric(table), table.num_rows, lambda row, base=rows: _csv_line(base + row))
            rows += table.num_rows

    return blocks


def _csv_table(source, read_options, delimiter: str):
    import pyarrow as pa
    import pyarrow.csv as pc

    try:
        return pc.read_csv(
            source,
            read_options=read_options,
            parse_options=pc.ParseOptions(delimiter=delimiter),
            # Empty and NA-style cells are missing; "nan" and "inf" written by the log are values.
            convert_options=pc.ConvertOptions(null_values=NULL_CELLS, strings_can_be_null=True),
        )
    except pa.ArrowInvalid as err:
        raise ReaderError(_csv_reason(str(err))) from None


def _csv_numeric(table) -> dict[str, Column]:
    columns = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        column = _arrow_numeric(col)
        if column is not None:
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

    line = _header_line(path, start, delimiter)
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        names = next(csv.reader(io.StringIO(text), delimiter=delimiter))
        return pc.ReadOptions(column_names=names, skip_rows=1)
    return pc.ReadOptions()


def _small_table(path: Path, start: bytes, delimiter: str) -> tuple[dict[str, Column], int] | None:
    """A small plain table parsed without pyarrow (:mod:`tracker.readers._small_csv`), else None."""
    from tracker.readers._small_csv import small_csv

    _header_line(path, start, delimiter)  # a table too wide is refused first, whatever its size
    return small_csv(path, delimiter)


def _header_line(path: Path, start: bytes, delimiter: str) -> bytes:
    """The header line, refused with a named error when the table is too wide to be a log."""
    line = start.split(b"\n", 1)[0] if b"\n" in start else _first_line(path)
    if line.count(delimiter.encode()) >= MAX_COLUMNS:
        raise ReaderError(f"{line.count(delimiter.encode()) + 1:,} columns: more than the "
                          f"{MAX_COLUMNS:,} a log table may have")
    return line


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


def step_column(columns: Iterable[str]) -> str | None:
    """The column that counts steps, if one has a recognised name."""
    lowered = {name.lower(): name for name in columns}
    for candidate in STEP_COLUMNS:
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None


def wall_candidates(columns: Iterable[str], exclude: str | None = None) -> Iterator[str]:
    """Columns whose name says they may hold each row's wall-clock time, most likely first."""
    lowered = {name.lower(): name for name in columns if name != exclude}
    return (lowered[c] for c in WALL_COLUMNS if c in lowered)


def wall_column(columns: dict[str, Column], exclude: str | None = None) -> str | None:
    """The column holding each row's epoch time (seconds or milliseconds), if any."""
    found = (n for n in wall_candidates(columns, exclude) if _epoch_seconds(columns[n]) is not None)
    return next(found, None)


def _epoch_seconds(col: Column) -> Column | None:
    """Epoch times in seconds (milliseconds are scaled), or None for other numbers."""
    values = col.values[col.present]
    finite = bool(np.isfinite(values).all())
    low, high = (values.min(), values.max()) if finite and len(values) else (0.0, 0.0)
    divisor = epoch_divisor(len(values), finite, low, high)
    if divisor is None:
        return None
    return col if divisor == 1.0 else Column(col.values / divisor, col.present)


def epoch_divisor(count: int, finite: bool, low: float, high: float) -> float | None:
    """1 for epoch seconds, 1000 for milliseconds, None for other numbers: from the count,
    finiteness and range of a column's values."""
    if not count or not finite:
        return None
    if low > 1e8 and high < 1e11:
        return 1.0
    if low > 1e11 and high < 1e14:
        return 1000.0
    return None


def carried(steps: Column) -> Column:
    """Steps with each gap filled from the row before (leading gaps from the first step)."""
    if steps.present.all() or not steps.present.any():
        return steps
    index = np.where(steps.present, np.arange(len(steps.values)), -1)
    np.maximum.accumulate(index, out=index)
    index[index < 0] = int(np.argmax(steps.present))
    return replace(steps, values=steps.values[index], present=np.ones(len(index), bool))
