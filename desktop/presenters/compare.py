"""Compare runs side by side: the settings that differ, then the results.

Settings are the shape fields and the flattened config; by default only keys
whose values differ between the runs are kept (the question is always "what
did I change?"). Results are the runs table's figures, always shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.shape import RunShape
from desktop.presenters import formatting as fmt
from desktop.presenters.run_columns import COLUMNS
from tracker.db.runs import RunSummary
from tracker.readers._common import flatten

MISSING = "—"
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
    return rows + _results([r.summary for r in runs])


def _settings(section: str, values: list[dict[str, Any]], keys: list[str]) -> list[CompareRow]:
    rows = []
    for key in keys:
        texts = tuple(text(v.get(key)) for v in values)
        if all(t == MISSING for t in texts):
            continue
        rows.append(CompareRow(section, key, texts, len(set(texts)) > 1))
    return rows


def _results(runs: list[RunSummary]) -> list[CompareRow]:
    rows = []
    for column in COLUMNS:
        if column.key in RESULT_COLUMNS:
            texts = tuple(column.text(column.value(r)) or MISSING for r in runs)
            rows.append(CompareRow("Results", column.title, texts, len(set(texts)) > 1))
    return rows


def text(value: Any) -> str:
    """A setting's value as one short line."""
    if value is None:
        return MISSING
    if isinstance(value, (bool, int, float)):
        return fmt.number(value, digits=6)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=str, separators=(", ", ": "))
    return str(value)
