"""The plots' x axis: a run's steps placed on step, tokens, samples, epoch, time or GPU-hours.

Any metric that only grows can be the x axis too (``metric:<name>``): each
point is placed at that metric's value at its step, interpolated between the
steps it was logged at. A run that cannot be placed on the chosen axis is left
out with the reason, rather than drawn somewhere wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from core.runlog import Series
from desktop.presenters import formatting as fmt

if TYPE_CHECKING:
    from desktop.presenters.plot_data import PlottedRun

AXES: dict[str, str] = {
    "step": "Step",
    "tokens": "Tokens seen",
    "samples": "Samples seen",
    "epoch": "Epoch",
    "wall": "Wall time",
    "relative": "Relative time",
    "gpu_hours": "GPU-hours",
}
METRIC = "metric:"  # prefix of an axis that is one of the runs' own metrics
# Metrics an axis already stands for, or that are not a position in training.
_NOT_AXES = {"tokens_seen", "samples_seen", "epoch", "elapsed_s"}
MISSING = {
    "tokens": "no tokens-seen series, batch size or sequence length to place on this axis",
    "samples": "no samples-seen series or global batch size to place on this axis",
    "epoch": "no epoch series",
    "wall": "no wall-clock times in the log",
    "relative": "no wall-clock times in the log",
    "gpu_hours": "no wall-clock times or no GPU count",
    "step": "",
}
TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0))


def label(axis: str) -> str:
    """The axis as the x-axis menu names it."""
    return AXES.get(axis) or axis.removeprefix(METRIC)


def missing(axis: str) -> str:
    return MISSING.get(axis, f"{axis.removeprefix(METRIC)} is not logged or goes down")


def choices(runs: Iterable[PlottedRun]) -> list[str]:
    """The axes to offer: the fixed ones, then metrics that only grow in every run logging them."""
    found: dict[str, bool] = {}
    for run in runs:
        for name, series in run.series.items():
            if name not in _NOT_AXES and not name.startswith(("mem", "eval")):
                found[name] = found.get(name, True) and _grows(series)
    return [*AXES, *(METRIC + name for name, ok in sorted(found.items()) if ok)]


def _grows(series: Series) -> bool:
    """A counter: at least a few points, never going down, not constant."""
    points = _points(series)
    if points is None or len(points[1]) < 3:
        return False
    values = points[1]
    return bool(np.all(np.diff(values) >= 0) and values[-1] > values[0])


class RunAxis:
    """Places one run's steps on the chosen x axis."""

    def __init__(self, run: PlottedRun, axis: str) -> None:
        self.axis = axis
        self.per_step = {"tokens": run.tokens_per_step, "samples": run.samples_per_step}.get(axis)
        source = {"tokens": "tokens_seen", "samples": "samples_seen", "epoch": "epoch"}.get(
            axis, axis.removeprefix(METRIC) if axis.startswith(METRIC) else None)
        self.counter = _points(run.series.get(source)) if source else None
        if axis.startswith(METRIC) and self.counter is not None and not _grows(
                run.series[source]):
            self.counter = None
        self.clock = _clock(run.series.values())
        self.start = float(self.clock[1].min()) if self.clock is not None else 0.0
        self.gpus = run.n_gpus

    @property
    def usable(self) -> bool:
        if self.axis in ("tokens", "samples"):
            return self.counter is not None or bool(self.per_step)
        if self.axis == "epoch" or self.axis.startswith(METRIC):
            return self.counter is not None
        if self.axis == "gpu_hours":
            return self.clock is not None and bool(self.gpus)
        return self.axis == "step" or self.clock is not None

    def x(self, steps: np.ndarray, walls: np.ndarray | None) -> np.ndarray:
        """x of each point; NaN where the run cannot say (the point is then left out)."""
        steps = steps.astype(np.float64)
        if self.axis == "step":
            return steps
        if self.counter is not None:
            return np.interp(steps, *self.counter, left=np.nan, right=np.nan)
        if self.axis in ("tokens", "samples"):
            return steps * float(self.per_step or np.nan)
        if walls is None or not np.isfinite(walls).any():
            walls = np.interp(steps, *self.clock, left=np.nan, right=np.nan)
        if self.axis == "gpu_hours":
            return (walls - self.start) * float(self.gpus or np.nan) / 3600.0
        return walls - self.start if self.axis == "relative" else walls


def _points(series: Series | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(steps, values) of a series, finite and in step order, for interpolation."""
    if series is None:
        return None
    keep = np.isfinite(series.values)
    if keep.sum() < 1:
        return None
    steps, values = series.steps[keep].astype(np.float64), series.values[keep]
    order = np.argsort(steps, kind="stable")
    return steps[order], values[order]


def _clock(series: Iterable[Series]) -> tuple[np.ndarray, np.ndarray] | None:
    """Step -> wall time from the series with the most wall-clock stamps."""
    timed = [s for s in series if s.wall_time is not None and np.isfinite(s.wall_time).any()]
    if not timed:
        return None
    best = max(timed, key=lambda s: int(np.isfinite(s.wall_time).sum()))
    return _points(Series(best.name, best.steps, best.wall_time))


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit a time span reads best in: under 2 of the next unit stays in this one."""
    unit = TIME_UNITS[0]
    for candidate in TIME_UNITS[1:]:
        if span_s >= 2 * candidate[1]:
            unit = candidate
    return unit


def x_text(axis: str, x_label: str, x: float) -> str:
    """An x position as the hover readout states it."""
    if axis == "wall":
        return datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M:%S")
    if axis in ("tokens", "samples"):
        return f"{fmt.compact(x)} {axis}"
    if axis == "relative":
        return f"{x:.3g} {x_label.rsplit('(', 1)[-1].rstrip(')')}"
    if axis == "step":
        return f"step {fmt.count(x)}"
    if axis == "gpu_hours":
        return f"{x:.3g} GPU-hours"
    return f"{label(axis).lower()} {fmt.number(x)}"
