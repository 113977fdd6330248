"""Parallel coordinates: each run a line across one vertical axis per field, and brushing.

Numbers are placed linearly between the smallest and largest value shown;
text fields (method, precision) as evenly spaced categories. Brushing a range
on axes keeps the runs inside every brush; the brushes are also written as a
query (:mod:`tracker.query`) so the runs table filters by exactly the same
runs, and the user sees, edits or saves what they brushed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from desktop.presenters import formatting as fmt
from tracker.fields import NUMBER, TEXT, Extras, named
from tracker.model import RunSummary

DEFAULT_FIELDS = ("method", "lora_rank", "micro_batch", "seq_len", "n_gpus", "peak_gib",
                  "tokens_per_s", "final_loss", "best_eval")
DIGITS = 4  # significant digits of a brushed bound written into the query


@dataclass(frozen=True)
class Axis:
    field: str
    kind: str  # "number" or "text"
    low: float = 0.0
    high: float = 1.0
    categories: tuple[str, ...] = ()

    def position(self, value: object) -> float:
        """Where ``value`` sits on the axis, 0 (bottom) to 1 (top); NaN when it has none."""
        if self.kind == TEXT:
            if value not in self.categories:
                return math.nan
            return (self.categories.index(value) + 0.5) / len(self.categories)
        if not _is_number(value):
            return math.nan
        span = self.high - self.low
        return 0.5 if span == 0 else (float(value) - self.low) / span

    def value_at(self, position: float) -> float:
        return self.low + position * (self.high - self.low)

    def tick(self, position: float) -> str:
        return fmt.number(self.value_at(position), digits=3)


@dataclass(frozen=True)
class Brush:
    """A range on one axis, in axis positions (0..1)."""

    axis: int
    low: float
    high: float


@dataclass(frozen=True)
class Lines:
    axes: list[Axis]
    run_ids: list[int]
    names: list[str]
    positions: np.ndarray  # runs x axes, NaN where a run lacks the field
    values: np.ndarray  # the numbers themselves (NaN for text and missing), for brushing


def axes_for(runs: list[RunSummary], fields: tuple[str, ...] | list[str],
             extras: Mapping[int, Extras] | None = None) -> list[Axis]:
    """An axis per field that at least two runs have a value for."""
    extras = extras or {}
    out = []
    for name in fields:
        f = named(name)
        values = [f.value(r, extras.get(r.id)) for r in runs]
        if f.kind == NUMBER:
            numbers = [float(v) for v in values if _is_number(v)]
            if len(numbers) >= 2:
                out.append(Axis(name, NUMBER, min(numbers), max(numbers)))
        elif f.kind == TEXT:
            found = sorted({v for v in values if isinstance(v, str)})
            if sum(isinstance(v, str) for v in values) >= 2:
                out.append(Axis(name, TEXT, categories=tuple(found)))
    return out


def lines(runs: list[RunSummary], axes: list[Axis],
          extras: Mapping[int, Extras] | None = None) -> Lines:
    extras = extras or {}
    fields = [named(a.field) for a in axes]
    raw = [[f.value(r, extras.get(r.id)) for f in fields] for r in runs]
    shape = (len(runs), len(axes))
    positions = np.array([[a.position(v) for a, v in zip(axes, row, strict=True)]
                          for row in raw], dtype=float).reshape(shape)
    values = np.array([[float(v) if _is_number(v) else math.nan for v in row] for row in raw],
                      dtype=float).reshape(shape)
    return Lines(axes, [r.id for r in runs], [r.name for r in runs], positions, values)


def brushed(found: Lines, brushes: list[Brush]) -> np.ndarray:
    """Which runs lie inside every brush (a run without the field is outside its brush)."""
    keep = np.ones(len(found.run_ids), dtype=bool)
    for brush in brushes:
        axis = found.axes[brush.axis]
        if axis.kind == TEXT:
            inside = [axis.position(c) for c in _categories(axis, brush)]
            keep &= np.isin(found.positions[:, brush.axis], inside)
        else:
            low, high = _bounds(axis, brush)
            column = found.values[:, brush.axis]
            keep &= (column >= low) & (column <= high)
    return keep


def brush_query(axes: list[Axis], brushes: list[Brush]) -> str:
    """The brushes as a query: ``seq_len >= 1024 and seq_len <= 4096 and method in ["lora"]``."""
    terms = []
    for brush in brushes:
        axis = axes[brush.axis]
        if axis.kind == TEXT:
            inside = _categories(axis, brush)
            terms.append(f"{axis.field} in [{', '.join(_quoted(c) for c in inside)}]")
        else:
            low, high = _bounds(axis, brush)
            terms.append(f"{axis.field} >= {low!r} and {axis.field} <= {high!r}")
    return " and ".join(terms)


def _categories(axis: Axis, brush: Brush) -> list[str]:
    low, high = sorted((brush.low, brush.high))
    return [c for c in axis.categories if low <= axis.position(c) <= high]


def _bounds(axis: Axis, brush: Brush) -> tuple[float, float]:
    """The brushed range in the field's units, widened to :data:`DIGITS` significant digits so
    the query written and the lines kept agree."""
    low, high = sorted((axis.value_at(brush.low), axis.value_at(brush.high)))
    return _round(low, math.floor), _round(high, math.ceil)


def _round(value: float, direction) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    scale = 10 ** (DIGITS - 1 - math.floor(math.log10(abs(value))))
    return direction(value * scale) / scale


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
