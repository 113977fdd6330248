"""Compare runs side by side: the results, then the settings that differ.

Results are the runs table's figures, always shown. Settings are the shape
fields and the flattened config; by default only keys whose values differ
between the runs are kept (the question is always "what did I change?").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.shape import RunShape
from desktop.presenters.formatting import MISSING, setting
from desktop.presenters.run_columns import COLUMNS
from desktop.presenters.shape_fields import label
from tracker.db.runs import RunSummary
from tracker.readers._common import flatten

RESULT_COLUMNS = ("steps", "last_loss", "min_loss", "best_eval", "peak_mem", "tokens_per_s")


@dataclass(frozen=True)
class CompareRun:
    """A run with the config the store keeps beside its summary."""

    summary: RunSummary
    config: dict[str, Any]


@dataclass(frozen=True)
class CompareRow:
    section: str  # "Shape", "Config" or "Results"
    key: str
    values: tuple[str, ...]
    differs: bool


def compare(runs: list[CompareRun], only_differences: bool = True) -> list[CompareRow]:
    """Rows for the compare table, one value per run, in the runs' order."""
    shapes = [r.summary.shape.known() for r in runs]
    rows = _settings("Shape", shapes, list(RunShape.field_names()))
    configs = [flatten(r.config) for r in runs]
    rows += _settings("Config", configs, sorted(set().union(*configs)) if configs else [])
    if only_differences:
        rows = [r for r in rows if r.differs]
    return _results([r.summary for r in runs]) + rows


def _settings(section: str, values: list[dict[str, Any]], keys: list[str]) -> list[CompareRow]:
    rows = []
    for key in keys:
        texts = tuple(setting(v.get(key)) for v in values)
        if all(t == MISSING for t in texts):
            continue
        name = label(key) if section == "Shape" else key
        rows.append(CompareRow(section, name, texts, len(set(texts)) > 1))
    return rows


def _results(runs: list[RunSummary]) -> list[CompareRow]:
    rows = []
    for column in COLUMNS:
        if column.key in RESULT_COLUMNS:
            texts = tuple(column.text(column.value(r)) or MISSING for r in runs)
            rows.append(CompareRow("Results", column.title, texts, len(set(texts)) > 1))
    return rows

