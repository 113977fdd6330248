"""Curve smoothing: TensorBoard's EMA, a running average, a Gaussian; one strength for all three.

TensorBoard's line chart (``vz_line_chart2/line-chart.ts``) smooths with an
exponential moving average started at 0 and debiased by ``1 - w**n``, where
``n`` counts the finite points seen so far; NaN and Inf points pass through
unchanged, and a constant series is left as it is. The debiased EMA is exactly
pandas' ``ewm(alpha=1 - w, adjust=True)``, which runs it in compiled code.

The other kinds (W&B offers them too) take the same strength ``w``: the EMA's
weight sets a window of ``(1 + w) / (1 - w)`` points, the span whose plain average
has the EMA's variance, for a trailing running average, or a Gaussian of half that
width as its standard deviation. All three smooth over the finite points only and
leave NaN and Inf where they are.
"""

from __future__ import annotations

import numpy as np

# The slider's top: at 1.0 the average would never move.
MAX_WEIGHT = 0.999
KINDS: dict[str, str] = {"ema": "EMA", "running": "Running average", "gaussian": "Gaussian"}


def ema(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard-smoothed copy of ``values``; ``weight`` in [0, 0.999], 0 = unsmoothed."""
    values = np.asarray(values, dtype=np.float64)
    if not 0.0 <= weight <= MAX_WEIGHT:
        raise ValueError(f"smoothing weight must be between 0 and {MAX_WEIGHT}, not {weight}")
    out = values.copy()
    finite = np.isfinite(values)
    if weight == 0.0 or not finite.any() or np.all(values == values[0]):
        return out
    import pandas as pd

    smoothed = pd.Series(values[finite]).ewm(alpha=1.0 - weight, adjust=True).mean()
    out[finite] = smoothed.to_numpy()
    return out


def window(weight: float) -> int:
    """The points a strength of ``weight`` averages over: the EMA's equivalent span."""
    return max(1, round((1.0 + weight) / (1.0 - weight)))


def smooth(values: np.ndarray, kind: str, weight: float) -> np.ndarray:
    """``values`` smoothed by ``kind`` ("ema", "running", "gaussian") at strength ``weight``."""
    if kind == "ema":
        return ema(values, weight)
    if kind not in KINDS:
        raise ValueError(f"unknown smoothing {kind!r}: one of {', '.join(KINDS)}")
    values = np.asarray(values, dtype=np.float64)
    if not 0.0 <= weight <= MAX_WEIGHT:
        raise ValueError(f"smoothing weight must be between 0 and {MAX_WEIGHT}, not {weight}")
    out = values.copy()
    finite = np.isfinite(values)
    if weight == 0.0 or finite.sum() < 2:
        return out
    points = window(weight)
    kept = values[finite]
    out[finite] = running_mean(kept, points) if kind == "running" else gaussian(kept, points / 2)
    return out


def running_mean(values: np.ndarray, points: int) -> np.ndarray:
    """The mean of each point and the ``points - 1`` before it (fewer at the start)."""
    import bottleneck

    return bottleneck.move_mean(values, window=min(points, len(values)), min_count=1)


def gaussian(values: np.ndarray, sigma: float) -> np.ndarray:
    """A Gaussian of ``sigma`` points over the curve, renormalised at its ends (no pull to 0).

    Done as one FFT convolution, so a million points with a wide kernel take
    milliseconds rather than minutes.
    """
    radius = min(int(np.ceil(4 * sigma)), len(values) - 1)
    if radius < 1:
        return values.copy()
    offsets = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    size = len(values) + 2 * radius
    n = 1 << (size - 1).bit_length()
    spectrum = np.fft.rfft(kernel, n)
    summed = np.fft.irfft(np.fft.rfft(values, n) * spectrum, n)[radius:radius + len(values)]
    weights = np.fft.irfft(np.fft.rfft(np.ones(len(values)), n) * spectrum,
                           n)[radius:radius + len(values)]
    return summed / weights
