from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.smoothing import ema, smooth, window


def tensorboard_smooth(values: list[float], weight: float) -> list[float]:
    """A line-by-line transcription of TensorBoard's resmoothDataset (vz_line_chart2)."""
    last = 0.0 if values else math.nan
    num_accum = 0
    is_constant = all(v == values[0] for v in values)
    out = []
    for v in values:
        if is_constant or not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        num_accum += 1
        debias = 1 - weight**num_accum if weight != 1 else 1
        out.append(last / debias)
    return out


def test_matches_tensorboard_on_a_noisy_loss_curve():
    rng = np.random.default_rng(0)
    loss = 3 * np.exp(-np.arange(2000) / 400) + rng.normal(0, 0.1, 2000)
    for weight in (0.0, 0.3, 0.6, 0.9, 0.99, 0.999):
        np.testing.assert_allclose(ema(loss, weight), tensorboard_smooth(loss.tolist(), weight),
                                   rtol=1e-10)


def test_first_point_is_unbiased_and_nan_inf_pass_through():
    values = np.array([4.0, np.nan, 2.0, np.inf, 1.0, -np.inf])
    out = ema(values, 0.6)
    assert out[0] == 4.0  # debiasing: no pull toward the 0 the average starts at
    assert math.isnan(out[1]) and out[3] == np.inf and out[5] == -np.inf
    np.testing.assert_allclose(out, tensorboard_smooth(values.tolist(), 0.6), rtol=1e-12)
    assert out[2] == pytest.approx((0.6 * 0.4 * 4 + 0.4 * 2) / (1 - 0.36))


def test_constant_series_is_unchanged_exactly():
    values = np.full(10_000, 0.1)
    assert np.array_equal(ema(values, 0.99), values)


def test_weight_outside_the_slider_range_is_refused():
    with pytest.raises(ValueError, match="between 0"):
        ema(np.ones(3), 1.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(math.nan), st.just(math.inf)), max_size=60),
    st.floats(0.0, 0.999),
)
def test_any_series_matches_tensorboard(values, weight):
    np.testing.assert_allclose(ema(np.array(values), weight), tensorboard_smooth(values, weight),
                               rtol=1e-9, atol=1e-6)


def test_running_average_and_gaussian_follow_their_definitions():
    rng = np.random.default_rng(3)
    values = rng.normal(size=500)
    values[[10, 200]] = [np.nan, np.inf]
    points = window(0.6)
    assert points == 4
    out = smooth(values, "running", 0.6)
    finite = values[np.isfinite(values)]
    expected = [finite[max(0, i - points + 1): i + 1].mean() for i in range(len(finite))]
    np.testing.assert_allclose(out[np.isfinite(values)], expected)
    assert math.isnan(out[10]) and out[200] == np.inf
    gauss = smooth(values, "gaussian", 0.9)  # sigma: half of a 19-point window
    sigma, i = window(0.9) / 2, 250
    offsets = np.arange(-38, 39)  # the kernel reaches 4 sigma
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    finite_at = np.flatnonzero(np.isfinite(values))
    j = int(np.searchsorted(finite_at, i))
    reference = (finite[j - 38: j + 39] * kernel).sum() / kernel.sum()
    assert gauss[finite_at[j]] == pytest.approx(reference, rel=1e-9)


def test_every_kind_keeps_a_constant_series_to_its_ends():
    values = np.full(1000, 1e-4)
    for kind in ("ema", "running", "gaussian"):
        np.testing.assert_allclose(smooth(values, kind, 0.999), values, rtol=1e-9)
    with pytest.raises(ValueError):
        smooth(values, "median", 0.5)
