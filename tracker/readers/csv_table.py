"""Generic CSV/TSV tables of metrics: a step column and numeric columns.

For a user's own ``pandas.DataFrame.to_csv``, a spreadsheet export, or any
logger without a reader of its own. Confidence stays modest so that specific
readers (Lightning ``metrics.csv``, W&B exports, console dialects) win their
files. A TensorBoard chart download (``Wall time,Step,Value``) names its one
series after the tag in its file name.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from core.runlog import RunLog
from tracker.readers._common import file_run_name, number, one_run
from tracker.readers._sniffing import Confidence, Sample, outranks
from tracker.readers._table import read_table
from tracker.readers._tabular import STEP_COLUMNS, csv_blocks

HEAD = 16384
# TensorBoard's "download CSV" names files run-<run>-tag-<tag>.csv ("/" in tags became "_").
_TB_EXPORT = re.compile(r"^run[-_](?P<run>.*?)[-_]tag[-_](?P<tag>.+)$")
_TB_COLUMNS = ["Wall time", "Step", "Value"]


def sniff(sample: Sample) -> float:
    text = sample.text[:HEAD]
    rows = _head_rows(text)
    if not rows and "\n" not in text and max(map(text.count, "\t,;")) > HEAD // 20:
        return Confidence.GENERIC  # a header longer than the head: read() says how wide it is
    if len(rows) < 2 or len(rows[0]) < 2:
        return Confidence.NONE
    if not any(number(cell) is not None for row in rows[1:] for cell in row):
        return Confidence.NONE
    steps = {name.lower() for name in STEP_COLUMNS}
    named_step = any(cell.strip().lower() in steps for cell in rows[0])
    return outranks(Confidence.GENERIC) if named_step else Confidence.GENERIC


def read(path: Path) -> RunLog:
    table = read_table(csv_blocks(path))
    name, names = file_run_name(path), None
    match = _TB_EXPORT.match(path.stem)
    if match and table.numeric() == _TB_COLUMNS:
        name, names = match["run"] or name, {"Value": match["tag"]}
    return table.finish(RunLog(format="csv", name=name), names)


def _head_rows(text: str) -> list[list[str]]:
    """The first complete lines, split with the delimiter the header uses."""
    lines = text.splitlines()
    if len(lines) > 20:
        lines = lines[:20]
    elif len(text) >= HEAD:
        lines = lines[:-1]  # the head may have cut the last line short
    if not lines:
        return []
    delimiter = max("\t,;", key=lines[0].count)
    return list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))


read_runs = one_run(read)  # the reader interface (tracker.readers)
