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
    return grid, np.vstack([_on_grid(grid, x, y) for x, y in curves])


def _on_grid(grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.full(len(grid), np.nan)
    finite = np.isfinite(y)
    if not finite.any():
        return out
    xs, ys = x[finite], y[finite]
    inside = (grid >= xs[0]) & (grid <= xs[-1])
    out[inside] = np.interp(grid[inside], xs, ys)
    if not finite.all():
        out[np.searchsorted(grid, x[~finite])] = np.nan  # the grid holds every member x
    return out


def aggregate(curves: Sequence[tuple[np.ndarray, np.ndarray]], stat: str = "mean",
              band: str = "std") -> Band:
    """The centre and band of ``curves`` (x sorted) on their aligned grid."""
    grid, values = align(curves)
    present = np.isfinite(values)
    count = present.sum(axis=0)
    keep = count > 0
    grid, values, count = grid[keep], values[:, keep], count[keep]
    with warnings.catch_warnings():  # columns with one member: no spread, not an error
        warnings.simplefilter("ignore", RuntimeWarning)
        centre, low, high = _centre_band(values, stat, band, bool(present[:, keep].all()))
    lone = count < 2
    low[lone], high[lone] = centre[lone], centre[lone]
    return Band(grid, centre, low, high, count)


def _centre_band(values: np.ndarray, stat: str, band: str,
                 full: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's plain reductions when every member has every x (much faster), else the nan ones."""
    mean, median, std = ((np.mean, np.median, np.std) if full
                         else (np.nanmean, np.nanmedian, np.nanstd))
    centre = mean(values, axis=0) if stat == "mean" else median(values, axis=0)
    if band == "std":
        spread = std(values, axis=0, ddof=1) if len(values) > 1 else np.zeros_like(centre)
        return centre, centre - spread, centre + spread
    if band == "minmax":
        lowest, highest = (np.min, np.max) if full else (np.nanmin, np.nanmax)
        return centre, lowest(values, axis=0), highest(values, axis=0)
    if band == "p90":
        quantile = np.percentile if full else np.nanpercentile
        low, high = quantile(values, [5, 95], axis=0)
        return centre, low, high
    return centre, centre.copy(), centre.copy()


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
