"""Robust statistics the detectors share: rolling median and MAD, noise, trend tests.

Training curves are noisy, heavy-tailed and trend downwards, so every
threshold is expressed in units of the curve's own noise, measured robustly
(medians and median absolute deviations), never as a fixed number.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from core.runlog import Series

# Scale that turns a median absolute deviation into a Gaussian standard deviation.
MAD_SIGMA = 1.4826
# Points a rolling statistic handles at a time: a long curve's temporaries stay a few MiB.
CHUNK = 1 << 18


def finite(series: Series) -> tuple[np.ndarray, np.ndarray]:
    """Steps and values of the finite points of ``series``, in step order.

    Where a log holds the same step twice (a run restarted from a checkpoint
    and logged those steps again), the newest point wins, as TensorBoard does.
    A series that is all finite and in order comes back as read-only views of
    its own arrays: a rule reading a long run holds no copy of it.
    """
    steps, values = series.steps, series.values
    keep = np.isfinite(values)
    if keep.all():
        steps, values = _read_only(steps), _read_only(values)
    else:
        steps, values = steps[keep], values[keep]
    del keep
    if len(steps) > 1 and np.any(steps[1:] <= steps[:-1]):
        # Last occurrence of each step, then step order.
        _, last = np.unique(steps[::-1], return_index=True)
        order = len(steps) - 1 - last
        steps, values = steps[order], values[order]
    return steps, values


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class Deviation:
    """Each point against the points just before it: median, noise and robust z-score."""

    median: np.ndarray
    sigma: np.ndarray
    z: np.ndarray


def trailing_deviations(values: np.ndarray, level_window: int, noise_window: int,
                        min_history: int, chunk: int | None = None) -> Iterator[tuple[int, Deviation]]:
    """Robust z-score of every point against the points just before it, ``chunk`` points at
    a time (:data:`CHUNK`): (index of the chunk's first point, its :class:`Deviation`).

    The level is the median of the ``level_window`` previous points (short, so
    it follows a falling curve); the noise is the rolling MAD of point-to-point
    differences over ``noise_window`` previous points (differences, so the
    curve's own trend does not count as noise). One outlier moves neither.
    Points with fewer than ``min_history`` earlier points get NaN. Each chunk is
    computed with the history its windows reach back to, so the figures are
    those of the whole curve, and a long curve never has its temporaries whole.
    """
    chunk = chunk or CHUNK
    reach = max(level_window, noise_window) + 2  # the diff of the shifted curve: two more
    floor = _NoiseFloor(values)
    for start in range(0, len(values), chunk):
        begin = max(start - reach, 0)
        part = values[begin : start + chunk]
        past = np.concatenate([[np.nan], part[:-1]])
        med = moving_median(past, level_window, min(min_history, level_window))
        mad = moving_median(np.abs(np.diff(past, prepend=np.nan)), noise_window, min_history)
        del past
        sigma = MAD_SIGMA / math.sqrt(2.0) * mad
        med[: max(min_history - begin, 0)] = np.nan
        inside = slice(start - begin, None)
        med, sigma, part = med[inside], sigma[inside], part[inside]
        with np.errstate(invalid="ignore"):
            z = (part - med) / np.maximum(sigma, floor.at(med, sigma))
        yield start, Deviation(med, sigma, z)


class _NoiseFloor:
    """The least noise a point is judged against.

    A constant curve has no noise at all; a rounded one (4 decimals in
    trainer_state.json) has at least its rounding step. That step is at most the
    smallest change between neighbours, so where every noise figure is larger the
    sort that finds it exactly is skipped (the usual case of an unrounded curve);
    a noise figure above it wins over the step anyway, so a chunk can decide alone.
    """

    def __init__(self, values: np.ndarray) -> None:
        self._values = values
        self._resolution: float | None = None
        changes = [_smallest_change(values[i : i + CHUNK + 1]) for i in range(0, len(values), CHUNK)]
        self._smallest = min((c for c in changes if c is not None), default=None)

    def at(self, med: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        floor = 1e-12 + 1e-6 * np.abs(med)
        known = sigma[np.isfinite(sigma)]
        if self._smallest is None or not len(known) or known.min() >= self._smallest:
            return floor
        if self._resolution is None:
            self._resolution = resolution(self._values)
        return np.maximum(floor, self._resolution)


def _smallest_change(values: np.ndarray) -> float | None:
    changes = np.abs(np.diff(values))
    changes = changes[changes > 0]
    return float(changes.min()) if len(changes) else None


def moving_median(values: np.ndarray, window: int, min_count: int) -> np.ndarray:
    """Median of each point's trailing ``window`` (NaN ignored; NaN until ``min_count`` values)."""
    import bottleneck as bn  # moving medians in C: a million points in tens of ms

    if len(values) < max(min_count, 1):
        return np.full(len(values), np.nan)
    window = min(window, len(values))
    return bn.move_median(values, window, min_count=min(min_count, window))


def median(values: np.ndarray) -> float:
    """The median, NaN when any value is NaN (as numpy's), computed in C: numpy's own first
    asks whether the array is masked, which imports numpy.ma, a tenth of a small ingest."""
    import bottleneck as bn

    return bn.median(values)


def resolution(values: np.ndarray) -> float:
    """The smallest step between distinct values: the rounding of the log."""
    distinct = np.unique(values[np.isfinite(values)])
    return float(np.min(np.diff(distinct))) if len(distinct) > 1 else 0.0


def noise_sigma(values: np.ndarray) -> float:
    """Point-to-point noise of a curve, robust to its trend (MAD of first differences)."""
    if len(values) < 3:
        return 0.0
    changes = np.diff(values)
    np.abs(changes, out=changes)  # in place: one temporary
    return MAD_SIGMA * median(changes) / math.sqrt(2.0)


def binned_medians(values: np.ndarray, bins: int) -> np.ndarray:
    """The curve reduced to ``bins`` medians of consecutive points (noise and length tamed)."""
    if len(values) <= bins:
        return values
    return np.array([median(part) for part in np.array_split(values, bins)])


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
    return max(median(np.diff(steps)), 1.0)
