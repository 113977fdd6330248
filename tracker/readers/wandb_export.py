"""CSV files exported from a W&B chart: several runs in one file.

The W&B app's "Export CSV" writes the chart's x axis first (``Step``, or the
step metric the chart uses), then for each run and metric ``<run> - <metric>``
with ``__MIN`` and ``__MAX`` companions (the extremes of each point's bucket
when the chart was sampled; copies of the value otherwise). Each run becomes
its own Headroom run, keyed by its W&B name.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from core.runlog import RunLog
from tracker.readers._common import ReaderError, head_text
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._table import add_table
from tracker.readers._tabular import Column, csv_columns

SEPARATOR = " - "
BOUNDS = ("__MIN", "__MAX")
# History keys W&B adds by itself; not metrics of the run.
INTERNAL = {"_step", "_runtime", "_timestamp"}


def sniff(sample: Sample) -> float:
    cells = _header(sample.text[:8192])[1:]
    if not cells or not all(SEPARATOR in cell for cell in cells):
        return Confidence.NONE
    return Confidence.PROBABLE if any(cell.endswith(BOUNDS) for cell in cells) else Confidence.WEAK


def read_runs(path: Path) -> list[RunLog]:
    columns = csv_columns(path)
    header = _header(head_text(path, 65536))
    if not header or header[0] not in columns:
        raise ReaderError(f"the first column ({header[0] if header else '?'}) is not numeric")
    x_name = header[0]
    x = columns.pop(x_name)
    # A time axis (relative or wall time) is no step: then the row number is.
    steps = {x_name: x} if np.all(np.mod(x.values[x.present], 1) == 0) else {}
    runs = []
    for name, metrics in _by_run(columns).items():
        run = RunLog(format="wandb_export", name=name, key=name)
        add_table(run, {**steps, **metrics}, step=x_name if steps else None)
        if run.series:
            runs.append(run)
    if not runs:
        raise ReaderError("no run has a numeric metric in this export")
    return runs


def _by_run(columns: dict[str, Column]) -> dict[str, dict[str, Column]]:
    """``<run> - <metric>`` columns grouped per run; bounds kept only where they differ."""
    runs: dict[str, dict[str, Column]] = {}
    for header, col in columns.items():
        base = header.removesuffix(BOUNDS[0]).removesuffix(BOUNDS[1])
        if SEPARATOR not in base:
            continue
        run, metric = base.rsplit(SEPARATOR, 1)
        if metric in INTERNAL:
            continue
        if header != base and _same(col, columns.get(base)):
            continue
        runs.setdefault(run, {})[metric + header[len(base):]] = col
    return runs


def _same(bound: Column, value: Column | None) -> bool:
    if value is None:
        return False
    both = bound.present & value.present
    return bool(np.array_equal(bound.values[both], value.values[both], equal_nan=True))


def _header(text: str) -> list[str]:
    first = text.split("\n", 1)[0].strip("\r\ufeff")
    return next(csv.reader(io.StringIO(first)), []) if first else []
