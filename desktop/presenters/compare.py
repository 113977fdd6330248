"""Compare runs side by side: the results, then the settings that differ.

Results are the runs table's figures, always shown. Settings are the shape
fields and the flattened config; by default only keys whose values differ
between the runs are kept (the question is always "what did I change?").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.shape import RunShape
from desktop.presenters import group_table
from desktop.presenters.formatting import MISSING, setting
from desktop.presenters.run_columns import COLUMNS
from desktop.presenters.shape_fields import label
from tracker.groups import Group
from tracker.model import RunSummary
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
    shapes = [[r.summary.shape.known()] for r in runs]
    rows = _settings("Shape", shapes, list(RunShape.field_names()))
    configs = [[flatten(r.config)] for r in runs]
    rows += _settings("Config", configs, sorted(set().union(*(c for c, in configs))))
    if only_differences:
        rows = [r for r in rows if r.differs]
    return _results([r.summary for r in runs]) + rows


def _results(runs: list[RunSummary]) -> list[CompareRow]:
    rows = []
    for column in COLUMNS:
        if column.key in RESULT_COLUMNS:
            texts = tuple(column.text(column.value(r)) or MISSING for r in runs)
            rows.append(CompareRow("Results", column.title, texts, len(set(texts)) > 1))
    return rows



@dataclass(frozen=True)
class CompareGroup:
    """A group of runs to compare with other groups: its figures and its members."""

    group: Group
    runs: list[CompareRun]


def compare_groups(groups: list[CompareGroup], only_differences: bool = True) -> list[CompareRow]:
    """Rows comparing groups: results as mean ± std, a setting as its value when every
    member shares it, else how many values its members have."""
    rows = []
    for name in group_table.columns([g.group for g in groups]):
        texts = tuple(group_table.mean_std(g.group.stats[name], name) or MISSING for g in groups)
        rows.append(CompareRow("Results", group_table.TITLES[name], texts, len(set(texts)) > 1))
    shapes = [[r.summary.shape.known() for r in g.runs] for g in groups]
    configs = [[flatten(r.config) for r in g.runs] for g in groups]
    settings = _settings("Shape", shapes, list(RunShape.field_names()))
    keys = sorted(set().union(*(c for group in configs for c in group)))
    settings += _settings("Config", configs, keys)
    return rows + [r for r in settings if r.differs or not only_differences]


def _settings(section: str, values: list[list[dict[str, Any]]],
              keys: list[str]) -> list[CompareRow]:
    """One row per key: each column's value (its members' shared value, for a group)."""
    rows = []
    for key in keys:
        texts = tuple(_shared(members, key) for members in values)
        if all(t == MISSING for t in texts):
            continue
        name = label(key) if section == "Shape" else key
        rows.append(CompareRow(section, name, texts, len(set(texts)) > 1))
    return rows


def _shared(members: list[dict[str, Any]], key: str) -> str:
    """The members' common value, or "varies (n values)"."""
    found = {setting(m.get(key)) for m in members}
    return found.pop() if len(found) == 1 else f"varies ({len(found)} values)"
