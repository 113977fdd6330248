"""Robust statistics the detectors share: rolling median and MAD, noise, trend tests.

Training curves are noisy, heavy-tailed and trend downwards, so every
threshold is expressed in units of the curve's own noise, measured robustly
(medians and median absolute deviations), never as a fixed number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.runlog import Series

# Scale that turns a median absolute deviation into a Gaussian standard deviation.
MAD_SIGMA = 1.4826


def finite(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """Steps and values of the finite points of ``series``, in step order.

    Where a log holds the same step twice (a run restarted from a checkpoint
    and logged those steps again), the newest point wins, as TensorBoard does.
    """
    keep = np.isfinite(series.values)
    steps, values = series.steps[keep], series.values[keep]
    if len(steps) > 1 and np.any(np.diff(steps) <= 0):
        # Last occurrence of each step, then step order.
        _, last = np.unique(steps[::-1], return_index=True)
        order = len(steps) - 1 - last
        steps, values = steps[order], values[order]
    return steps, values


@dataclass(frozen=True)
class Deviation:
    """Each point against the points just before it: median, noise and robust z-score."""

    median: np.ndarray
    sigma: np.ndarray
    z: np.ndarray


def trailing_deviation(
    values: np.ndarray, level_window: int, noise_window: int, min_history: int
) -> Deviation:
    """Robust z-score of every point against the points just before it.

    The level is the median of the ``level_window`` previous points (short, so
    it follows a falling curve); the noise is the rolling MAD of point-to-point
    differences over ``noise_window`` previous points (differences, so the
    curve's own trend does not count as noise). One outlier moves neither.
    Points with fewer than ``min_history`` earlier points get NaN.
    """
    past = np.concatenate([[np.nan], values[:-1]])
    med = moving_median(past, level_window, min(min_history, level_window))
    mad = moving_median(np.abs(np.diff(past, prepend=np.nan)), noise_window, min_history)
    sigma = MAD_SIGMA / math.sqrt(2.0) * mad
    med[:min_history] = np.nan
    with np.errstate(invalid="ignore"):
        z = (values - med) / np.maximum(sigma, _noise_floor(values, med, sigma))
    return Deviation(med, sigma, z)


def _noise_floor(values: np.ndarray, med: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The least noise a point is judged against.

    A constant curve has no noise at all; a rounded one (4 decimals in
    trainer_state.json) has at least its rounding step. That step is at most the
    smallest change between neighbours, so where every noise figure is larger the
    sort that finds it exactly is skipped (the usual case of an unrounded curve).
    """
    floor = 1e-12 + 1e-6 * np.abs(med)
    changes = np.abs(np.diff(values))
    changes = changes[changes > 0]
    known = sigma[np.isfinite(sigma)]
    if len(known) and len(changes) and known.min() >= changes.min():
        return floor
    return np.maximum(floor, resolution(values))


def moving_median(values: np.ndarray, window: int, min_count: int) -> np.ndarray:
    """Median of each point's trailing ``window`` (NaN ignored; NaN until ``min_count`` values)."""
    import bottleneck as bn  # moving medians in C: a million points in tens of ms

    if len(values) < max(min_count, 1):
        return np.full(len(values), np.nan)
    window = min(window, len(values))
    return bn.move_median(values, window, min_count=min(min_count, window))


def resolution(values: np.ndarray) -> float:
    """The smallest step between distinct values: the rounding of the log."""
    distinct = np.unique(values[np.isfinite(values)])
    return float(np.min(np.diff(distinct))) if len(distinct) > 1 else 0.0


def noise_sigma(values: np.ndarray) -> float:
    """Point-to-point noise of a curve, robust to its trend (MAD of first differences)."""
    if len(values) < 3:
        return 0.0
    return float(MAD_SIGMA * np.median(np.abs(np.diff(values))) / math.sqrt(2.0))


def binned_medians(values: np.ndarray, bins: int) -> np.ndarray:
    """The curve reduced to ``bins`` medians of consecutive points (noise and length tamed)."""
    if len(values) <= bins:
        return values
    return np.array([np.median(part) for part in np.array_split(values, bins)])


def mann_kendall(values: np.ndarray) -> float:
    """Normal-approximation z of the Mann-Kendall trend test (negative: falling).

    Distribution-free, so it suits skewed loss curves; callers bin long curves
    first (:func:`binned_medians`) to keep it quadratic in a small number.
    """
    n = len(values)
    if n < 4:
        return 0.0
    diffs = np.sign(values[None, :] - values[:, None])
    s = float(np.triu(diffs, 1).sum())
    var = n * (n - 1) * (2 * n + 5) / 18.0
    if s == 0 or var <= 0:
        return 0.0
    return (s - math.copysign(1.0, s)) / math.sqrt(var)


def value_at(series: Series | None, step: int) -> float | None:
    """The last finite value of ``series`` at or before ``step`` (None when there is none)."""
    if series is None:
        return None
    steps, values = finite(series)
    i = int(np.searchsorted(steps, step, side="right")) - 1
    return float(values[i]) if i >= 0 else None


def step_interval(steps: np.ndarray) -> float:
    """The typical spacing of logged steps."""
    if len(steps) < 2:
        return 1.0
    return float(max(np.median(np.diff(steps)), 1.0))
