"""Showing a selected finding on the stacked plots: highlight its range, zoom to its steps.

The x axes are linked, so one range zooms every panel. The finding's own panel
then fits its y range to what its curves do within that window (raw points
included), so a spike or a plateau fills it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from desktop.presenters.plot_data import PlotSpec
from desktop.presenters.plot_marks import DEFAULT_METRIC, Focus, region_of, y_extent, zoom_range

if TYPE_CHECKING:  # the plots panel imports this before pyqtgraph is loaded
    from desktop.views.metric_plot import MetricPlot

Y_PADDING = 0.08


def highlight(plots: list[MetricPlot], focus: Focus | None) -> None:
    """Shade the focused finding strongly on every panel; label it on its metric's panel."""
    key = focus.key if focus else None
    labelled = _own_panel(plots, focus)
    for plot in plots:
        plot.overlays.highlight(key, label=plot is labelled)


def zoom(plots: list[MetricPlot], spec: PlotSpec, focus: Focus, log_y: bool) -> bool:
    """Zoom every panel to the finding's steps; False when the plots do not show them."""
    region = region_of(spec.panels, focus.key)
    span = _x_span(spec)
    if region is None or span is None:
        return False
    x_range = zoom_range(region, span)
    plots[0].plot.setXRange(*x_range, padding=0)
    own = _own_panel(plots, focus)
    extent = y_extent(own.panel, x_range) if own and own.panel else None
    if extent is not None and log_y:
        extent = _log(extent)
    if extent is not None:
        own.plot.setYRange(*extent, padding=Y_PADDING)
    return True


def unzoom(plots: list[MetricPlot]) -> None:
    """Back to the whole runs (auto-range), after a finding's zoom."""
    for plot in plots:
        plot.plot.enableAutoRange()


def _own_panel(plots: list[MetricPlot], focus: Focus | None) -> MetricPlot | None:
    """The panel of the finding's metric (the first panel when it names none shown)."""
    if focus is None or not plots:
        return None
    metric = focus.metric or DEFAULT_METRIC
    return next((p for p in plots if p.panel and p.panel.metric == metric), plots[0])


def _x_span(spec: PlotSpec) -> tuple[float, float] | None:
    xs = [c.x[np.isfinite(c.x)] for p in spec.panels for c in p.curves]
    xs = [x for x in xs if len(x)]
    if not xs:
        return None
    return min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)


def _log(extent: tuple[float, float]) -> tuple[float, float] | None:
    low, high = extent
    if high <= 0:
        return None
    return math.log10(low) if low > 0 else math.log10(high) - 1, math.log10(high)
