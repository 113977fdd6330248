"""What the plots show: which panels, and each run's curves on the chosen x axis.

The view draws a :class:`PlotSpec` as it is; everything that decides a number
(x transforms, smoothing, NaN marks, resume lines, hover values, CSV rows) is
here, without Qt, so it is tested headless.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TextIO

import numpy as np

from core.diagnostics import Finding
from core.runlog import Series
from core.smoothing import ema
from desktop.presenters import formatting as fmt
from desktop.presenters.plot_marks import Annotations, CheckpointMark, Origin, annotate
from desktop.presenters.run_columns import MEMORY_METRICS

X_AXES: dict[str, str] = {
    "step": "Step",
    "tokens": "Tokens seen",
    "wall": "Wall time",
    "relative": "Relative time",
}

# The seed article's advice: always watch loss (with eval), learning rate, memory
# peak, throughput, batch size and data volume. Each group's first metric that the
# selected runs have becomes a panel.
DEFAULT_PANELS: tuple[tuple[str, ...], ...] = (
    ("loss", "eval_loss"),
    ("lr",),
    MEMORY_METRICS,
    ("tokens_per_s", "samples_per_s"),
    ("batch_size",),
    ("tokens_seen", "samples_seen"),
)
# Schedules, counters and running maxima are exact: smoothing would only distort them.
NEVER_SMOOTHED = frozenset({
    "lr", "epoch", "loss_scale", "batch_size", "micro_batch_size", "seq_len", "tokens_seen",
    "samples_seen", "skipped_iters", "nan_iters", *MEMORY_METRICS,
})
# Metrics drawn (dashed, unsmoothed) on another metric's panel unless chosen on their own.
OVERLAYS: dict[str, tuple[str, ...]] = {"loss": ("eval_loss",)}

TITLES: dict[str, str] = {
    "loss": "loss",
    "eval_loss": "eval loss",
    "lr": "learning rate",
    "grad_norm": "gradient norm",
    "loss_scale": "loss scale",
    "mem_peak_gib": "memory peak (GiB)",
    "mem_reserved_gib": "memory reserved (GiB)",
    "mem_used_gib": "memory used (GiB)",
    "tokens_per_s": "tokens / s",
    "samples_per_s": "samples / s",
    "step_time_s": "step time (s)",
    "batch_size": "batch size",
    "tokens_seen": "tokens seen",
    "samples_seen": "samples seen",
}

# Tableau 10: distinct for the common forms of colour blindness, readable on white.
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


def colour(index: int) -> str:
    """The colour of the ``index``-th selected run."""
    return PALETTE[index % len(PALETTE)]


def title(metric: str) -> str:
    return TITLES.get(metric, metric)


@dataclass
class RunData:
    """One selected run as the plots need it, loaded from the store."""

    run_id: int
    name: str
    series: dict[str, Series]
    resumes: list[int] = field(default_factory=list)  # steps where the run was resumed
    tokens_per_step: float | None = None  # global batch x sequence length, when known
    version: tuple = ()  # changes when the log grows or the run is renamed
    checkpoints: list[CheckpointMark] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    origin: Origin | None = None  # the checkpoint of another run this one resumed from


@dataclass
class Curve:
    """One run's metric on one panel."""

    run_id: int
    label: str
    metric: str
    colour: str
    x: np.ndarray
    y: np.ndarray
    smooth: np.ndarray | None  # None when unsmoothed
    overlay: bool  # a secondary metric (eval loss): dashed, with point symbols
    bad_x: np.ndarray  # where NaN/Inf points are...
    bad_y: np.ndarray  # ...marked: at the last finite value before them

    @property
    def shown(self) -> np.ndarray:
        """The y the eye follows: smoothed when smoothing is on."""
        return self.y if self.smooth is None else self.smooth


@dataclass
class Panel:
    metric: str
    title: str
    curves: list[Curve] = field(default_factory=list)
    resumes: list[tuple[float, str]] = field(default_factory=list)  # (x, colour)
    annotations: Annotations = field(default_factory=Annotations)  # checkpoints, findings


@dataclass
class PlotSpec:
    panels: list[Panel]
    axis: str
    x_label: str
    notes: list[str] = field(default_factory=list)  # runs left out, and why


def choose_metrics(available: Iterable[str], chosen: list[str] | None = None) -> list[str]:
    """Panels to show: the user's choice where the runs have it, else the defaults."""
    available = set(available)
    if chosen:
        picked = [m for m in chosen if m in available]
        if picked:
            return picked
    return [next(m for m in group if m in available)
            for group in DEFAULT_PANELS if any(m in available for m in group)]


class SmoothingCache:
    """Smoothed copies of the curves last built, so each is smoothed once.

    A redraw that only changes what is shown (a run added to the selection, a
    panel added, the axis switched back) finds the curves it smoothed before. An
    entry holds the series array it was made from and counts only for that very
    array (a reload brings new ones), and is kept only while the last build used it.
    """

    def __init__(self) -> None:
        self._smoothed: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._used: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def ema(self, key: tuple, source: np.ndarray, values: np.ndarray, weight: float) -> np.ndarray:
        """``values`` (the curve made of ``source``) smoothed, or as smoothed before."""
        entry = self._smoothed.get(key)
        smoothed = entry[1] if entry is not None and entry[0] is source else ema(values, weight)
        self._used[key] = (source, smoothed)
        return smoothed

    def keep_used(self) -> None:
        """Forget what the build just finished did not ask for (deselected runs, old weights)."""
        self._smoothed, self._used = self._used, {}


def build(runs: list[RunData], metrics: list[str], axis: str = "step",
          smoothing: float = 0.0, cache: SmoothingCache | None = None) -> PlotSpec:
    """Every panel's curves for ``runs`` (in selection order, which sets their colours)."""
    cache = cache or SmoothingCache()
    panels = [Panel(m, title(m)) for m in metrics]
    left_out: list[str] = []
    for index, run in enumerate(runs):
        place = _RunAxis(run, axis)
        if not place.usable:
            left_out.append(run.name)
            continue
        for panel in panels:
            _add_run(panel, run, place, colour(index), metrics, smoothing, cache)
    cache.keep_used()
    spec = PlotSpec(panels, axis, X_AXES[axis].lower())
    if axis == "relative":
        _scale_time(spec)
    if left_out:
        spec.notes.append(f"{', '.join(left_out)}: {_MISSING[axis]}")
    return spec


_MISSING = {
    "tokens": "no tokens-seen series, batch size or sequence length to place on this axis",
    "wall": "no wall-clock times in the log",
    "relative": "no wall-clock times in the log",
    "step": "",
}


def _add_run(panel: Panel, run: RunData, place: _RunAxis, colour_: str, metrics: list[str],
             smoothing: float, cache: SmoothingCache) -> None:
    overlays = [m for m in OVERLAYS.get(panel.metric, ()) if m not in metrics]
    for metric in (panel.metric, *overlays):
        series = run.series.get(metric)
        if series is None or len(series) == 0:
            continue
        overlay = metric != panel.metric
        x = place.x(series.steps, series.wall_time)
        weight = 0.0 if overlay or metric in NEVER_SMOOTHED else smoothing
        curve = _curve(run, metric, colour_, x, series.values, overlay)
        if weight > 0:
            curve.smooth = cache.ema((run.run_id, metric, place.axis, weight), series.values,
                                     curve.y, weight)
        panel.curves.append(curve)
    if any(c.run_id == run.run_id for c in panel.curves):
        xs = place.x(np.asarray(run.resumes, dtype=np.int64), None)
        panel.resumes.extend((float(x), colour_) for x in xs if np.isfinite(x))
        annotate(panel, run, colour_, lambda steps: place.x(steps, None))


def _curve(run: RunData, metric: str, colour_: str, x: np.ndarray, y: np.ndarray,
           overlay: bool) -> Curve:
    """The curve in x order, without points the axis cannot place; smoothed by the caller."""
    keep = np.isfinite(x)
    if not keep.all():
        x, y = x[keep], y[keep]
    if len(x) > 1 and np.any(np.diff(x) < 0):
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
    bad = np.flatnonzero(~np.isfinite(y))
    return Curve(run.run_id, run.name, metric, colour_, x, y, None, overlay,
                 x[bad], _last_finite(y)[bad] if len(bad) else y[bad])


def _last_finite(y: np.ndarray) -> np.ndarray:
    """Each point's most recent finite value (the first finite one for a leading NaN)."""
    finite = np.isfinite(y)
    if not finite.any():
        return np.zeros_like(y)
    index = np.where(finite, np.arange(len(y)), -1)
    index = np.maximum.accumulate(index)
    index[index < 0] = np.flatnonzero(finite)[0]
    return y[index]


class _RunAxis:
    """Places a run's steps on the chosen x axis (step, tokens, wall or relative time)."""

    def __init__(self, run: RunData, axis: str) -> None:
        self.axis = axis
        self.tokens = _points(run.series.get("tokens_seen"))
        self.tokens_per_step = run.tokens_per_step
        self.clock = _clock(run.series.values())
        self.start = float(self.clock[1].min()) if self.clock is not None else 0.0

    @property
    def usable(self) -> bool:
        if self.axis == "tokens":
            return self.tokens is not None or bool(self.tokens_per_step)
        return self.axis == "step" or self.clock is not None

    def x(self, steps: np.ndarray, walls: np.ndarray | None) -> np.ndarray:
        """x of each point; NaN where the run cannot say (the point is then left out)."""
        steps = steps.astype(np.float64)
        if self.axis == "step":
            return steps
        if self.axis == "tokens":
            if self.tokens is not None:
                return np.interp(steps, *self.tokens, left=np.nan, right=np.nan)
            return steps * float(self.tokens_per_step or np.nan)
        if walls is None or not np.isfinite(walls).any():
            walls = np.interp(steps, *self.clock, left=np.nan, right=np.nan)
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


TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0))


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit a time span reads best in: under 2 of the next unit stays in this one."""
    unit = TIME_UNITS[0]
    for candidate in TIME_UNITS[1:]:
        if span_s >= 2 * candidate[1]:
            unit = candidate
    return unit


def _scale_time(spec: PlotSpec) -> None:
    span = max((float(c.x[-1]) for p in spec.panels for c in p.curves if len(c.x)), default=0.0)
    name, seconds = time_unit(span)
    spec.x_label = f"time since start ({name})"
    for panel in spec.panels:
        for c in panel.curves:
            c.x, c.bad_x = c.x / seconds, c.bad_x / seconds
        panel.resumes = [(x / seconds, col) for x, col in panel.resumes]
        panel.annotations.scale(seconds)


def nearest(x: np.ndarray, at: float) -> int | None:
    """Index of the point of a sorted ``x`` nearest to ``at``, if ``at`` is within its range."""
    if len(x) == 0 or not x[0] <= at <= x[-1]:
        return None
    i = int(np.searchsorted(x, at))
    if i == len(x) or (i > 0 and at - x[i - 1] <= x[i] - at):
        i -= 1
    return i


def x_text(spec: PlotSpec, x: float) -> str:
    """An x position as the hover readout states it."""
    if spec.axis == "wall":
        return datetime.fromtimestamp(x).strftime("%Y-%m-%d %H:%M:%S")
    if spec.axis == "tokens":
        return f"{fmt.compact(x)} tokens"
    if spec.axis == "relative":
        return f"{x:.3g} {spec.x_label.rsplit('(', 1)[-1].rstrip(')')}"
    return f"step {fmt.count(x)}"


def write_csv(out: TextIO, spec: PlotSpec, x_range: tuple[float, float] | None = None) -> int:
    """The shown points (within ``x_range``) as long-form CSV; returns the rows written."""
    writer = csv.writer(out)
    writer.writerow(["run", "metric", spec.x_label, "value", "smoothed"])
    rows = 0
    for panel in spec.panels:
        for c in panel.curves:
            keep = slice(None) if x_range is None else (c.x >= x_range[0]) & (c.x <= x_range[1])
            smooth = c.smooth[keep] if c.smooth is not None else [None] * len(c.x[keep])
            for x, y, s in zip(c.x[keep], c.y[keep], smooth, strict=True):
                writer.writerow([c.label, c.metric, _csv_number(x), _csv_number(y),
                                 "" if s is None else _csv_number(s)])
                rows += 1
    return rows


def _csv_number(value: float) -> str:
    """Shortest exact text: 120 for a step, 0.1 for a loss, nan for NaN."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
