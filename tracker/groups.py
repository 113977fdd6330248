"""Runs grouped by a field, with each group's summary figures as mean ± std.

A group is named by a field (``method``, ``lora_rank``, ``tags``,
``config.training_args.learning_rate``: any name a query takes) or by a
regular expression over a text field: ``name~-seed\\d+`` groups runs whose
names are equal once the pattern is taken out, and a pattern with groups,
``name~lr([0-9e.-]+)``, groups by what they capture. ``headroom runs
--group-by`` prints these aggregates and the app's groups table shows them.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.query import QueryError
from tracker.fields import ALIASES, TEXT, Extras, Field, named
from tracker.model import RunSummary

NONE = "(none)"
# The runs table's figures, aggregated per group.
SUMMARY_FIELDS = ("steps", "final_loss", "min_loss", "best_eval", "peak_gib", "tokens_per_s",
                  "mfu", "gpu_hours")


@dataclass(frozen=True)
class GroupBy:
    """What runs are grouped by: a field, and a pattern over it when one is given."""

    text: str
    field: Field
    pattern: re.Pattern | None = None

    @property
    def needs_extras(self) -> bool:
        return self.field.needs_extras

    def key(self, run: RunSummary, extras: Extras | None = None) -> str:
        """The group ``run`` belongs to, as a label."""
        value = self.field.value(run, extras)
        if self.pattern is None or value is None:
            return label(value)
        text = str(value)
        if self.pattern.groups:
            found = self.pattern.search(text)
            return " ".join(g for g in found.groups() if g) if found else NONE
        return self.pattern.sub("", text) or NONE


def group_by(text: str, metrics: Iterable[str] = ()) -> GroupBy:
    """Read ``FIELD`` or ``FIELD~PATTERN`` (raises :class:`QueryError` with the column)."""
    name, tilde, pattern = text.partition("~")
    field = named(name, metrics)
    if not tilde:
        return GroupBy(text, field)
    column = len(name) + 2
    if field.kind != TEXT:
        raise QueryError(f"a pattern applies to a text field; {field.name} is not one", column)
    try:
        return GroupBy(text, field, re.compile(pattern))
    except re.error as err:
        raise QueryError(f"bad pattern: {err.msg}", column + (err.pos or 0)) from None


def label(value: Any) -> str:
    """A field's value as a group's name."""
    if value is None or value == []:
        return NONE
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class Stat:
    """One summary figure over a group's runs that have it."""

    n: int
    mean: float
    std: float | None  # the sample standard deviation; None with one run
    min: float
    max: float

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class Group:
    key: str
    run_ids: tuple[int, ...]
    names: tuple[str, ...]
    stats: dict[str, Stat | None]

    @property
    def count(self) -> int:
        return len(self.run_ids)

    def to_dict(self, by: str) -> dict[str, Any]:
        return {"group_by": by, "key": self.key, "count": self.count, "runs": list(self.run_ids),
                "names": list(self.names),
                "summary": {k: s.to_dict() if s else None for k, s in self.stats.items()}}


def assign(runs: Iterable[RunSummary], by: GroupBy,
           extras: Mapping[int, Extras] | None = None) -> dict[str, list[RunSummary]]:
    """Runs by group, groups in the order their first run comes."""
    out: dict[str, list[RunSummary]] = {}
    for run in runs:
        out.setdefault(by.key(run, (extras or {}).get(run.id)), []).append(run)
    return out


def groups(runs: Iterable[RunSummary], by: GroupBy,
           extras: Mapping[int, Extras] | None = None) -> list[Group]:
    """Each group with the mean ± std of every summary figure over its runs."""
    extras = extras or {}
    out = []
    for key, members in assign(runs, by, extras).items():
        stats = {name: stat(_alias(name).value(r, extras.get(r.id)) for r in members)
                 for name in SUMMARY_FIELDS}
        out.append(Group(key, tuple(r.id for r in members), tuple(r.name for r in members),
                         stats))
    return out


def stat(values: Iterable[Any]) -> Stat | None:
    """Mean, sample std, min and max of the finite numbers in ``values`` (None: there are none)."""
    numbers = [float(v) for v in values
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not numbers:
        return None
    std = statistics.stdev(numbers) if len(numbers) > 1 else None
    return Stat(len(numbers), statistics.fmean(numbers), std, min(numbers), max(numbers))


def _alias(name: str) -> Field:
    return Field(name, "number", ALIASES[name][0])
