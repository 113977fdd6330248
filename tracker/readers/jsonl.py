"""Generic JSON-lines logs: one object per line, its numbers become metrics.

For a user's own ``json.dumps`` per step and loggers without a reader of their
own. Nested objects are flattened (``{"eval": {"loss": 1}}`` is ``eval/loss``),
numeric strings count as numbers, and the step is the first step-like key
(``step``, ``global_step``, ``iteration``...); without one the line number is
the step. Confidence stays modest so that specific JSONL readers (Headroom's
own, LLaMA-Factory, ms-swift, W&B history) win their files.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

from core.runlog import RunLog
from tracker.readers import JSON_LINES
from tracker.readers._common import ReaderError, file_run_name, flatten, number, one_run, parse_json
from tracker.readers._sniffing import Confidence, Sample, outranks
from tracker.readers._table import read_table
from tracker.readers._tabular import STEP_COLUMNS, WALL_COLUMNS, json_lines_blocks

# Other suffixes need this many object lines in the head before the file counts as JSON lines.
MIN_LINES_OTHERWISE = 2
_NOT_METRICS = {name.lower() for name in (*STEP_COLUMNS, *WALL_COLUMNS)}


def sniff(sample: Sample) -> float:
    rows = _head_rows(sample.head[:16384])
    named = any(fnmatch(sample.name, pattern) for pattern in JSON_LINES)
    if not rows or (not named and len(rows) < MIN_LINES_OTHERWISE):
        return Confidence.NONE
    keys = {key.lower() for row in rows for key, value in flatten(row, sep="/").items()
            if number(value) is not None}
    if not keys - _NOT_METRICS:
        return Confidence.NONE
    score = Confidence.GENERIC if named else Confidence.FALLBACK
    return outranks(score) if keys & {name.lower() for name in STEP_COLUMNS} else score


def read(path: Path) -> RunLog:
    table = read_table(json_lines_blocks(path))
    return table.finish(RunLog(format="jsonl", name=file_run_name(path)))


def _head_rows(data: bytes) -> list[dict]:
    """The JSON objects on the first complete lines, up to a broken one; [] if one is no object."""
    lines = data.split(b"\n")[:-1] if b"\n" in data else [data]
    rows = []
    for raw in lines[:10]:
        if not raw.strip():
            continue
        try:
            value = parse_json(raw.decode("utf-8", errors="replace"))
        except ReaderError:
            break  # a broken line is for read() to name; the lines before it decide
        if not isinstance(value, dict):
            return []
        rows.append(value)
    return rows


read_runs = one_run(read)  # the reader interface (tracker.readers)
