"""Curve smoothing as TensorBoard does it, so a curve looks the same in Headroom.

TensorBoard's line chart (``vz_line_chart2/line-chart.ts``) smooths with an
exponential moving average started at 0 and debiased by ``1 - w**n``, where
``n`` counts the finite points seen so far; NaN and Inf points pass through
unchanged, and a constant series is left as it is. The debiased EMA is exactly
pandas' ``ewm(alpha=1 - w, adjust=True)``, which runs it in compiled code.
"""

from __future__ import annotations

import numpy as np

# The slider's top: at 1.0 the average would never move.
MAX_WEIGHT = 0.999


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
