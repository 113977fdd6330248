"""A panel's y range: from the raw points in view, optionally without outliers, never flat.

The range follows the raw curves, not the smoothed ones, so a spike that
happened is in view; with outlier clipping on, the extreme 1 % at either end
is left out (a first steps' loss of 11 no longer flattens a curve that ends at
2). A constant series (a learning rate of 1e-4) gets a range around its value,
where a plot library would centre an arbitrary one on 0.
"""

from __future__ import annotations

import numpy as np

from desktop.presenters.plot_data import Panel

CLIP_QUANTILES = (0.01, 0.99)
PADDING = 0.05  # of the span, above and below
FLAT_PADDING = 0.1  # of the value itself, for a constant series


def y_limits(panel: Panel, x_range: tuple[float, float] | None = None, clip: bool = False,
             log: bool = False) -> tuple[float, float] | None:
    """The y range to show (in log10 units when ``log``); None when nothing is in view.

    Runs at every pan of a panel, so without clipping it takes each curve's extremes
    over a slice of its (sorted) x, never copying a million points.
    """
    parts = [y for x, y in _arrays(panel) for y in (_slice(x, y, x_range),) if len(y)]
    if clip or log:
        values = np.concatenate(parts) if parts else np.empty(0)
        values = values[np.isfinite(values)]
        if log:
            values = np.log10(values[values > 0])
        if not len(values):
            return None
        if clip and len(values) > 2:
            low, high = (float(v) for v in np.quantile(values, CLIP_QUANTILES))
        else:
            low, high = float(values.min()), float(values.max())
        return _padded(low, high, log)
    ends = [e for y in parts if (e := _extremes(y)) is not None]
    if not ends:
        return None
    return _padded(min(e[0] for e in ends), max(e[1] for e in ends), log)


def _arrays(panel: Panel):
    """(x, y) of what sets the range: the raw points (a smoothed curve lies within them), bands."""
    for curve in panel.curves:
        yield curve.x, curve.y
    for band in panel.bands:
        yield band.x, band.low
        yield band.x, band.high


def _slice(x: np.ndarray, y: np.ndarray, x_range: tuple[float, float] | None) -> np.ndarray:
    if x_range is None:
        return y
    start, stop = np.searchsorted(x, x_range[0]), np.searchsorted(x, x_range[1], side="right")
    return y[start:stop]


def _extremes(y: np.ndarray) -> tuple[float, float] | None:
    import bottleneck

    low, high = float(bottleneck.nanmin(y)), float(bottleneck.nanmax(y))
    if np.isfinite(low) and np.isfinite(high):
        return low, high
    finite = y[np.isfinite(y)]  # Inf among the points: the rare slow path
    return (float(finite.min()), float(finite.max())) if len(finite) else None


def _padded(low: float, high: float, log: bool) -> tuple[float, float]:
    span = high - low
    if span > 1e-9 * max(abs(low), abs(high), 1e-300):
        return low - PADDING * span, high + PADDING * span
    if log:  # a tenth of a decade either side
        return low - FLAT_PADDING, high + FLAT_PADDING
    pad = abs(low) * FLAT_PADDING if low else 1.0
    return low - pad, high + pad
