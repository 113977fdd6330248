"""Run groups on the plots: each group's mean (or median) curve with a band, computed on aligned x.

A group's members are put on one grid, the union of their x (steps, tokens
or time: whatever the panel's axis is), so every stored point of every
member counts; between two of its own points a member is interpolated,
outside its own range it is absent, and a NaN point stays a gap. The centre
is the mean or the median of the members present at each x; the band is
± the sample standard deviation (``ddof=1``), min to max, or the 5th to
95th percentile, and collapses where fewer than two members are present.
Members are aggregated as the panel shows them (smoothed, when smoothing is
on). Qt-free: the view draws what :func:`group_panels` returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from desktop.presenters.plot_data import Panel, PlotSpec, colour
from desktop.presenters.plot_marks import Annotations

STATS = {"mean": "Mean", "median": "Median"}
BANDS = {"std": "± std", "minmax": "Min–max", "p90": "90 % interval", "none": "No band"}
MEMBER_ALPHA = "50"  # members drawn behind their group: this opacity, in Qt's #AARRGGBB


@dataclass(frozen=True)
class Grouping:
    """How the user groups the selected runs ("" for ``by``: not at all)."""

    by: str = ""
    stat: str = "mean"
    band: str = "std"
    members: bool = False

    @property
    def active(self) -> bool:
        return bool(self.by.strip())


@dataclass
class Band:
    """A group's curve on its grid: the centre, the band's edges, and members present at each x."""

    x: np.ndarray
    centre: np.ndarray
    low: np.ndarray
    high: np.ndarray
    count: np.ndarray


@dataclass
class GroupCurve:
    """One group's aggregate of one metric on one panel."""

    key: str
    label: str
    metric: str
    colour: str
    overlay: bool  # the panel's secondary metric (eval loss on the loss panel): dashed
    band: Band
    run_ids: tuple[int, ...] = field(default_factory=tuple)


def align(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(grid, members x grid values): the union of the members' x, each member placed on it.

    Members that share their x exactly (the usual case: the same logging
    steps) are stacked as they are; otherwise each is interpolated between its
    own points and NaN outside its range and at its own NaN points.
    """
    first = curves[0][0]
    if all(len(x) == len(first) and np.array_equal(x, first) for x, _ in curves[1:]):
        return first, np.vstack([np.asarray(y, dtype=np.float64) for _, y in curves])
    grid = np.unique(np.concatenate([x for x, _ in curves]))
    values = np.full((len(curves), len(grid)), np.nan)
    for row, (x, y) in zip(values, curves, strict=True):
        _on_grid(row, grid, x, y)
    return grid, values


def _on_grid(row: np.ndarray, grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """Fill ``row`` (NaN) with the member between its first and last finite point."""
    finite = np.isfinite(y)
    if not finite.any():
        return
    xs, ys = x[finite], y[finite]
    start, stop = np.searchsorted(grid, xs[0]), np.searchsorted(grid, xs[-1], side="right")
    row[start:stop] = np.interp(grid[start:stop], xs, ys)
    if not finite.all():
        row[np.searchsorted(grid, x[~finite])] = np.nan  # the grid holds every member x


def aggregate(curves: Sequence[tuple[np.ndarray, np.ndarray]], stat: str = "mean",
              band: str = "std") -> Band:
    """The centre and band of ``curves`` (x sorted) on their aligned grid."""
    grid, values = align(curves)
    count = np.isfinite(values).sum(axis=0)
    if not count.all():
        keep = count > 0
        grid, values, count = grid[keep], values[:, keep], count[keep]
    partial = count < len(values)  # columns some member lacks: the NaN-aware reductions
    centre, low, high = _centre_band(values, stat, band, partial)
    lone = count < 2
    low[lone], high[lone] = centre[lone], centre[lone]
    return Band(grid, centre, low, high, count)


def _centre_band(values: np.ndarray, stat: str, band: str,
                 partial: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def reduce(fast, slow, **options) -> np.ndarray:
        """numpy's plain reduction (much faster) over every column, its NaN-aware twin over the
        columns some member lacks."""
        out = fast(values, axis=0, **options)
        if partial.any():
            with warnings.catch_warnings():  # one member left: no spread, not an error
                warnings.simplefilter("ignore", RuntimeWarning)
                out[..., partial] = slow(values[:, partial], axis=0, **options)
        return out

    centre = reduce(np.mean, np.nanmean) if stat == "mean" else reduce(np.median, np.nanmedian)
    if band == "std":
        spread = (reduce(np.std, np.nanstd, ddof=1) if len(values) > 1
                  else np.zeros_like(centre))
        return centre, centre - spread, centre + spread
    if band == "minmax":
        return centre, reduce(np.min, np.nanmin), reduce(np.max, np.nanmax)
    if band == "p90":
        low, high = reduce(np.percentile, np.nanpercentile, q=[5, 95])
        return centre, low, high
    return centre, centre.copy(), centre.copy()


def envelope(x: np.ndarray, low: np.ndarray, high: np.ndarray, start: float, stop: float,
             buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band between ``start`` and ``stop`` in at most ``buckets`` steps, for drawing.

    Each bucket keeps the lowest low and the highest high of its points, so a
    band drawn from it covers every point's band (as peak downsampling keeps
    every spike of a curve). One point either side of the range is kept so the
    band reaches the view's edges.
    """
    first = max(int(np.searchsorted(x, start)) - 1, 0)
    last = min(int(np.searchsorted(x, stop, side="right")) + 1, len(x))
    x, low, high = x[first:last], low[first:last], high[first:last]
    if len(x) <= 2 * buckets:
        return x, low, high
    starts = np.linspace(0, len(x), buckets, endpoint=False).astype(np.int64)
    lows, highs = np.fmin.reduceat(low, starts), np.fmax.reduceat(high, starts)
    return (np.append(x[starts], x[-1]), np.append(lows, low[-1]),
            np.append(highs, high[-1]))


def group_panels(spec: PlotSpec, assignment: Mapping[int, str],
                 grouping: Grouping) -> tuple[PlotSpec, list[list[GroupCurve]]]:
    """The spec to draw under the groups, and each panel's group curves.

    Members keep their curves, faded to their group's colour, when the user
    asks to see them; otherwise their curves (and their per-run marks) are
    left out and only the groups are drawn.
    """
    keys = list(dict.fromkeys(assignment[c.run_id] for p in spec.panels for c in p.curves
                              if c.run_id in assignment))
    colours = {key: colour(i) for i, key in enumerate(keys)}
    drawn, groups = [], []
    for panel in spec.panels:
        groups.append(_panel_groups(panel, assignment, keys, colours, grouping))
        drawn.append(_members(panel, assignment, colours, grouping.members))
    return replace(spec, panels=drawn), groups


def _panel_groups(panel: Panel, assignment: Mapping[int, str], keys: list[str],
                  colours: dict[str, str], grouping: Grouping) -> list[GroupCurve]:
    out = []
    for overlay in (False, True):
        for key in keys:
            members = [c for c in panel.curves if c.overlay == overlay
                       and assignment.get(c.run_id) == key and len(c.x)]
            if not members:
                continue
            band = aggregate([(c.x, c.shown) for c in members], grouping.stat, grouping.band)
            runs = tuple(dict.fromkeys(c.run_id for c in members))
            out.append(GroupCurve(key, f"{key} ({len(runs)} run{'s' * (len(runs) != 1)})",
                                  members[0].metric, colours[key], overlay, band, runs))
    return out


def _members(panel: Panel, assignment: Mapping[int, str], colours: dict[str, str],
             shown: bool) -> Panel:
    if not shown:
        return Panel(panel.metric, panel.title)
    curves = [replace(c, colour=_faded(colours[assignment[c.run_id]]))
              for c in panel.curves if c.run_id in assignment]
    return Panel(panel.metric, panel.title, curves, [], Annotations())


def _faded(hex_colour: str) -> str:
    return f"#{MEMBER_ALPHA}{hex_colour.lstrip('#')}"
