"""What the plots show: which panels, and each run's curves and bands on the chosen x axis.

The view draws a :class:`PlotSpec` as it is; everything that decides a number
(x placement, smoothing, NaN marks, resume lines, per-GPU bands, hover values,
CSV rows) is here or beside it, without Qt, so it is tested headless.

Adding to the plots (run groups, reference lines): a function ``fn(spec, runs)``
given to ``PlotsPanel.add_contributor`` runs after every build and may append
:class:`Curve` objects (``run_id`` any hashable, such as ``"group:lr=1e-3"``) and
:class:`Band` objects to ``spec.panels[i]``, or drop curves; the panel draws them
like its own, with hover values, the legend, y ranges and CSV export.
"""

from __future__ import annotations

import csv
import re
import warnings
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from core.diagnostics import Finding
from core.palette import PALETTE
from core.runlog import Series
from core.smoothing import smooth
from desktop.presenters import plot_axes
from desktop.presenters.plot_axes import RunAxis, time_unit
from desktop.presenters.plot_marks import Annotations, CheckpointMark, Origin, annotate
from desktop.presenters.run_columns import MEMORY_METRICS
from desktop.presenters.run_names import display_names

__all__ = ["PALETTE", "Band", "Curve", "Panel", "PlotSpec", "PlottedRun", "build", "time_unit"]

# A metric logged per GPU ("power_w/gpu3") is shown as a family: one panel, each run's
# mean (the busiest GPU for memory) with its spread across GPUs as a band.
FAMILY = "/*"
_PER_GPU = re.compile(r"^(?P<base>.+)/gpu\d+$")
# The seed article's advice: always watch loss (with eval), learning rate, memory
# peak, throughput, batch size and data volume; then what the GPUs did. Each group's
# first metric that the selected runs have becomes a panel.
DEFAULT_PANELS: tuple[tuple[str, ...], ...] = (
    ("loss", "eval_loss"),
    ("lr",),
    MEMORY_METRICS,
    ("mem_used_gib" + FAMILY,),
    ("tokens_per_s", "samples_per_s"),
    ("gpu_util_pct" + FAMILY,),
    ("power_w" + FAMILY,),
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
    "mem_used_gib" + FAMILY: "memory used per GPU (GiB): busiest, band across GPUs",
    "gpu_util_pct" + FAMILY: "GPU utilisation (%): mean, band across GPUs",
    "power_w" + FAMILY: "GPU power (W): mean, band across GPUs",
    "temp_c" + FAMILY: "GPU temperature (°C): mean, band across GPUs",
}


def colour(index: int) -> str:
    """The ``index``-th palette colour (groups in other plots; runs have their own)."""
    return PALETTE[index % len(PALETTE)]


def title(metric: str) -> str:
    if metric in TITLES:
        return TITLES[metric]
    return f"{metric[:-len(FAMILY)]}: mean, band across GPUs" if metric.endswith(FAMILY) else metric


def family_of(name: str) -> str | None:
    """The family panel a per-GPU metric belongs to ("power_w/gpu3" -> "power_w/*")."""
    found = _PER_GPU.match(name)
    return found["base"] + FAMILY if found else None


def with_families(names: Iterable[str]) -> set[str]:
    """Metric names plus the family panels their per-GPU metrics make."""
    names = set(names)
    return names | {f for f in map(family_of, names) if f}


@dataclass
class PlottedRun:
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
    colour: str = ""  # the run's stored colour ("" for the palette's, by selection order)
    samples_per_step: float | None = None  # global batch, when known
    n_gpus: int | None = None
    source_path: str = ""


@dataclass
class Curve:
    """One run's metric on one panel (or a line a contributor adds: a group's mean)."""

    run_id: Hashable
    label: str
    metric: str
    colour: str
    x: np.ndarray
    y: np.ndarray
    smooth: np.ndarray | None  # None when unsmoothed
    overlay: bool  # a secondary metric (eval loss): dashed, with point symbols
    bad_x: np.ndarray  # where NaN/Inf points are...
    bad_y: np.ndarray  # ...marked: at the last finite value before them
    tip: str = ""  # the run's full name and where it was read from
    width: float | None = None  # a stroke width of its own (None: the panel's)
    listed: bool = True  # named in the legend (a group's faded members are not)

    @property
    def shown(self) -> np.ndarray:
        """The y the eye follows: smoothed when smoothing is on."""
        return self.y if self.smooth is None else self.smooth


@dataclass
class Band:
    """A shaded range between two lines (a run's GPUs from least to most, a group's std)."""

    x: np.ndarray
    low: np.ndarray
    high: np.ndarray
    colour: str
    label: str = ""
    run_id: Hashable = None
    metric: str = ""  # the metric of the curve it spreads ("": its run's only curve)


@dataclass
class Panel:
    metric: str
    title: str
    curves: list[Curve] = field(default_factory=list)
    resumes: list[tuple[float, str]] = field(default_factory=list)  # (x, colour)
    annotations: Annotations = field(default_factory=Annotations)  # checkpoints, findings
    bands: list[Band] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        """Whether the panel has a point to draw (else it is not shown)."""
        return any(np.isfinite(c.y).any() for c in self.curves) or any(
            np.isfinite(b.high).any() for b in self.bands)


@dataclass
class PlotSpec:
    panels: list[Panel]
    axis: str
    x_label: str
    notes: list[str] = field(default_factory=list)  # runs left out, and why
    hidden: list[str] = field(default_factory=list)  # chosen panels with no point to show


def choose_metrics(available: Iterable[str], chosen: list[str] | None = None) -> list[str]:
    """Panels to show: the user's choice where the runs have it, else the defaults."""
    available = with_families(available)
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

    def smooth(self, key: tuple, source: np.ndarray, values: np.ndarray, kind: str,
               weight: float) -> np.ndarray:
        """``values`` (the curve made of ``source``) smoothed, or as smoothed before."""
        key = (*key, kind, weight)
        entry = self._smoothed.get(key)
        found = entry is not None and entry[0] is source
        smoothed = entry[1] if found else smooth(values, kind, weight)
        self._used[key] = (source, smoothed)
        return smoothed

    def keep_used(self) -> None:
        """Forget what the build just finished did not ask for (deselected runs, old weights)."""
        self._smoothed, self._used = self._used, {}


@dataclass(frozen=True)
class _Look:
    """How one run is drawn: its colour and shown name."""

    colour: str
    label: str
    tip: str


def build(runs: list[PlottedRun], metrics: list[str], axis: str = "step",
          smoothing: float = 0.0, cache: SmoothingCache | None = None,
          kind: str = "ema") -> PlotSpec:
    """Every panel's curves for ``runs`` (in selection order), on ``axis``, smoothed by ``kind``.

    Runs carry their own colour; each is named by what tells it apart from the
    others shown. Panels left without a point are listed in ``hidden``, not drawn.
    """
    cache = cache or SmoothingCache()
    panels = [Panel(m, title(m)) for m in metrics]
    looks = _looks(runs)
    left_out: list[str] = []
    for run, look in zip(runs, looks, strict=True):
        place = RunAxis(run, axis)
        if not place.usable:
            left_out.append(look.label)
            continue
        for panel in panels:
            if panel.metric.endswith(FAMILY):
                _add_family(panel, run, place, look)
            else:
                _add_run(panel, run, place, look, metrics, (kind, smoothing), cache)
    cache.keep_used()
    spec = PlotSpec([p for p in panels if p.has_data], axis, plot_axes.label(axis).lower(),
                    hidden=[p.metric for p in panels if not p.has_data])
    if axis == "relative":
        _scale_time(spec)
    if left_out:
        spec.notes.append(f"{', '.join(left_out)}: {plot_axes.missing(axis)}")
    return spec


def _looks(runs: list[PlottedRun]) -> list[_Look]:
    names = display_names([r.name for r in runs], [r.source_path for r in runs])
    return [_Look(run.colour or colour(i), name, f"{run.name}\n{run.source_path}".strip())
            for i, (run, name) in enumerate(zip(runs, names, strict=True))]


def _add_run(panel: Panel, run: PlottedRun, place: RunAxis, look: _Look, metrics: list[str],
             smoothing: tuple[str, float], cache: SmoothingCache) -> None:
    overlays = [m for m in OVERLAYS.get(panel.metric, ()) if m not in metrics]
    kind, weight = smoothing
    for metric in (panel.metric, *overlays):
        series = run.series.get(metric)
        if series is None or len(series) == 0:
            continue
        overlay = metric != panel.metric
        x = place.x(series.steps, series.wall_time)
        curve = _curve(run, metric, look, x, series.values, overlay)
        if weight > 0 and not overlay and metric not in NEVER_SMOOTHED:
            curve.smooth = cache.smooth((run.run_id, metric, place.axis), series.values,
                                        curve.y, kind, weight)
        panel.curves.append(curve)
    if any(c.run_id == run.run_id for c in panel.curves):
        _add_marks(panel, run, place, look.colour)


def _add_marks(panel: Panel, run: PlottedRun, place: RunAxis, colour_: str) -> None:
    xs = place.x(np.asarray(run.resumes, dtype=np.int64), None)
    panel.resumes.extend((float(x), colour_) for x in xs if np.isfinite(x))
    annotate(panel, run, colour_, lambda steps: place.x(steps, None))


def _add_family(panel: Panel, run: PlottedRun, place: RunAxis, look: _Look) -> None:
    """The run's per-GPU series of the family as one line (mean, or busiest for memory) with
    the spread across GPUs as a band."""
    base = panel.metric[:-len(FAMILY)]
    members = [s for name, s in sorted(run.series.items()) if family_of(name) == panel.metric]
    if not members:
        return
    steps = np.unique(np.concatenate([s.steps for s in members]))
    grid = np.full((len(members), len(steps)), np.nan)
    for row, s in zip(grid, members, strict=True):
        row[np.searchsorted(steps, s.steps)] = s.values
    x = place.x(steps, None)
    with warnings.catch_warnings():  # a step where no GPU was sampled is just a gap
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanmin(grid, axis=0), np.nanmax(grid, axis=0)
        line = high if base.startswith("mem") else np.nanmean(grid, axis=0)
    curve = _curve(run, panel.metric, look, x, line, overlay=False)
    curve.label = f"{look.label} ({len(members)} GPUs)"
    panel.curves.append(curve)
    keep = np.isfinite(x)
    panel.bands.append(Band(x[keep], low[keep], high[keep], look.colour, curve.label, run.run_id,
                            panel.metric))
    _add_marks(panel, run, place, look.colour)


def _curve(run: PlottedRun, metric: str, look: _Look, x: np.ndarray, y: np.ndarray,
           overlay: bool) -> Curve:
    """The curve in x order, without points the axis cannot place; smoothed by the caller."""
    keep = np.isfinite(x)
    if not keep.all():
        x, y = x[keep], y[keep]
    if len(x) > 1 and np.any(np.diff(x) < 0):
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
    bad = np.flatnonzero(~np.isfinite(y))
    return Curve(run.run_id, look.label, metric, look.colour, x, y, None, overlay,
                 x[bad], _last_finite(y)[bad] if len(bad) else y[bad], look.tip)


def _last_finite(y: np.ndarray) -> np.ndarray:
    """Each point's most recent finite value (the first finite one for a leading NaN)."""
    finite = np.isfinite(y)
    if not finite.any():
        return np.zeros_like(y)
    index = np.where(finite, np.arange(len(y)), -1)
    index = np.maximum.accumulate(index)
    index[index < 0] = np.flatnonzero(finite)[0]
    return y[index]


def _scale_time(spec: PlotSpec) -> None:
    span = max((float(c.x[-1]) for p in spec.panels for c in p.curves if len(c.x)), default=0.0)
    name, seconds = time_unit(span)
    spec.x_label = f"time since start ({name})"
    for panel in spec.panels:
        for c in panel.curves:
            c.x, c.bad_x = c.x / seconds, c.bad_x / seconds
        for b in panel.bands:
            b.x = b.x / seconds
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
    return plot_axes.x_text(spec.axis, spec.x_label, x)


def write_csv(out: TextIO, spec: PlotSpec, x_range: tuple[float, float] | None = None) -> int:
    """The shown points (within ``x_range``) as long-form CSV; returns the rows written."""
    writer = csv.writer(out)
    writer.writerow(["run", "metric", spec.x_label, "value", "smoothed"])
    rows = 0
    for panel in spec.panels:
        for c in panel.curves:
            keep = slice(None) if x_range is None else (c.x >= x_range[0]) & (c.x <= x_range[1])
            smooth_ = c.smooth[keep] if c.smooth is not None else [None] * len(c.x[keep])
            for x, y, s in zip(c.x[keep], c.y[keep], smooth_, strict=True):
                writer.writerow([c.label, c.metric, _csv_number(x), _csv_number(y),
                                 "" if s is None else _csv_number(s)])
                rows += 1
    return rows


def _csv_number(value: float) -> str:
    """Shortest exact text: 120 for a step, 0.1 for a loss, nan for NaN."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
