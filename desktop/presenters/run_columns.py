"""The runs table's columns: what each shows, how it sorts, and how rows are filtered.

Each row is computed once from a :class:`RunSummary` (summary statistics only,
never points), so painting, sorting and filtering thousands of runs touch no
database and call no formatting code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from core.diagnostics import severity_rank
from core.shape import RunShape
from desktop.presenters import formatting as fmt
from desktop.presenters import live_status
from tracker.fields import MEMORY_METRICS, last_step, peak_gib
from tracker.model import RunSummary

__all__ = ["COLUMNS", "MEMORY_METRICS", "RunRow", "make_rows", "matches", "sort_rows"]


@dataclass(frozen=True)
class Column:
    """One column: its title, the value it sorts by, and how that value reads."""

    key: str
    title: str
    value: Callable[[RunSummary], Any]
    text: Callable[[Any], str] = lambda v: "" if v is None else str(v)
    numeric: bool = False
    tip: str = ""
    label: Callable[[RunSummary], str] | None = None  # when the text says more than the value

    def cell(self, run: RunSummary, value: Any) -> str:
        return self.label(run) if self.label is not None else self.text(value)


def _stat(metric: str, attr: str) -> Callable[[RunSummary], Any]:
    return lambda run: run.stat(metric, attr)


def model_label(shape: RunShape) -> str | None:
    """The model as a person names it (the hub id or path's last part), else its size."""
    if shape.model:
        return shape.model.rstrip("/").rsplit("/", 1)[-1]
    if shape.n_params:
        return f"{shape.n_params / 1e9:.1f}B params"
    return shape.family


def _gpus(run: RunSummary) -> int | None:
    return run.shape.n_gpus


def _gpus_text(run: RunSummary) -> str:
    n, gpu = run.shape.n_gpus, run.shape.gpu_model
    if n is None:
        return gpu or ""
    return f"{n} × {gpu}" if gpu else str(n)


def _severity(run: RunSummary) -> int | None:
    """Sorts the worst findings first when descending; runs without findings go last."""
    return None if run.severity is None else severity_rank(run.severity)


COLUMNS: tuple[Column, ...] = (
    Column("name", "Name", lambda r: r.name),
    Column("status", "Status", lambda r: r.status, live_status.cell,
           tip="running, finished, crashed, or crashed? when the log stopped growing"),
    Column("severity", "", _severity, lambda _v: "",
           tip="The worst diagnostic finding: critical, warning or info (none: nothing found)"),
    Column("model", "Model", lambda r: model_label(r.shape)),
    Column("method", "Method", lambda r: r.shape.method),
    Column("gpus", "GPUs", _gpus, tip="GPUs the run used (and their model)", label=_gpus_text),
    Column("steps", "Steps", last_step, fmt.count, numeric=True, tip="last step logged"),
    Column("last_loss", "Last loss", _stat("loss", "last"), fmt.number, numeric=True),
    Column("min_loss", "Min loss", _stat("loss", "min"), fmt.number, numeric=True),
    Column("best_eval", "Best eval", _stat("eval_loss", "min"), fmt.number, numeric=True,
           tip="lowest evaluation loss"),
    Column("peak_mem", "Peak GiB", peak_gib, fmt.gib, numeric=True,
           tip="peak device memory: allocated, else reserved, else as nvidia-smi saw it"),
    Column("tokens_per_s", "Tokens/s", _stat("tokens_per_s", "last"), fmt.count, numeric=True,
           tip="throughput at the last logged step"),
    Column("format", "Format", lambda r: r.format),
    Column("started", "Started", lambda r: r.started_at, fmt.when),
    Column("tags", "Tags", lambda r: ", ".join(r.tags) or None),
)
COLUMN_INDEX = {c.key: i for i, c in enumerate(COLUMNS)}


@dataclass(frozen=True)
class RunRow:
    """One run as the table shows it, computed once."""

    run: RunSummary
    keys: tuple[Any, ...]
    texts: tuple[str, ...]
    haystack: str  # lower-cased text the filter box searches


def make_rows(runs: Iterable[RunSummary]) -> list[RunRow]:
    return [make_row(run) for run in runs]


def make_row(run: RunSummary) -> RunRow:
    keys = tuple(column.value(run) for column in COLUMNS)
    texts = tuple(column.cell(run, key) for column, key in zip(COLUMNS, keys, strict=True))
    described = (texts[COLUMN_INDEX[key]] for key in ("model", "method", "gpus"))
    words = (run.name, run.format, run.source_path, run.notes, run.severity, *described,
             *run.tags)
    return RunRow(run, keys, texts, " ".join(w for w in words if w).lower())


def sort_rows(rows: Iterable[RunRow], column: int, descending: bool) -> list[RunRow]:
    """Rows ordered by one column; runs without a value go last either way."""
    rows = list(rows)
    present = [r for r in rows if r.keys[column] is not None]
    missing = [r for r in rows if r.keys[column] is None]
    if _is_text(present, column):
        return sorted(present, key=lambda r: r.keys[column].lower(), reverse=descending) + missing
    return sorted(present, key=lambda r: r.keys[column], reverse=descending) + missing


def _is_text(rows: list[RunRow], column: int) -> bool:
    return bool(rows) and isinstance(rows[0].keys[column], str)


def matches(row: RunRow, text: str = "", tag: str | None = None,
            fmt_name: str | None = None) -> bool:
    """Whether a row passes the filter box (every word must appear), tag and format."""
    if tag is not None and tag not in row.run.tags:
        return False
    if fmt_name is not None and row.run.format != fmt_name:
        return False
    return all(word in row.haystack for word in text.lower().split())
