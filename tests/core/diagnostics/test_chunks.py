"""The rolling statistics taken a chunk at a time say exactly what they say over the whole curve.

A long run's diagnosis computes its trailing medians and noise in chunks (bounded memory);
each chunk carries the history its windows reach back to, so every figure and every finding
is the whole-curve one. Checked on synthetic curves (spikes, rounding, NaN gaps, restarts)
and on real runs of the corpus, each diagnosed with tiny chunks and with one chunk.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import _stats, diagnose
from core.diagnostics._stats import trailing_deviations
from core.diagnostics.finding import RunData
from core.runlog import Series
from tests.conftest import CORPUS
from tests.core.diagnostics.runs import read

CHUNKS = (1, 7, 64, 1000)


def _curves() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    n = 5000
    steps = np.arange(n)
    loss = 2 + 3 / (1 + steps / 300) + 0.02 * rng.standard_normal(n)
    loss[[900, 901, 2500, 4100]] += [1.5, 1.2, 3.0, 0.8]
    rounded = np.round(loss, 4)
    flat_then_noisy = np.where(steps < 1200, 1.0, loss)
    gaps = loss.copy()
    gaps[rng.integers(0, n, 200)] = np.nan
    grad = np.exp(rng.standard_normal(n) * 0.1)
    grad[[1500, 3333]] = 500.0
    return {"loss": loss, "rounded": rounded, "flat then noisy": flat_then_noisy,
            "gaps": gaps, "log grad": np.log10(grad), "short": loss[:30]}


def _joined(values: np.ndarray, chunk: int) -> tuple[np.ndarray, ...]:
    parts = list(trailing_deviations(values, 10, 50, 10, chunk))
    assert [start for start, _ in parts] == list(range(0, len(values), chunk))
    return tuple(np.concatenate([getattr(d, f) for _, d in parts]) for f in ("median", "sigma", "z"))


@pytest.mark.parametrize("name", list(_curves()))
def test_chunked_deviation_equals_the_whole_curves(name):
    values = _curves()[name]
    whole = _joined(values, len(values))
    for chunk in CHUNKS:
        for got, want in zip(_joined(values, chunk), whole, strict=True):
            np.testing.assert_array_equal(got, want)


def _synthetic_run() -> RunData:
    curves = _curves()
    steps = np.arange(len(curves["loss"]))
    loss = curves["loss"].copy()
    loss[3000:3005] = np.nan
    grad = 10 ** curves["log grad"]
    lr = np.minimum(1.0, (steps + 1) / 100) * 3e-4
    series = {name: Series(name, steps, values) for name, values in
              (("loss", loss), ("grad_norm", grad), ("lr", lr))}
    return RunData(series=series, name="synthetic")


CORPUS_RUNS = [
    "tensorboard/fyh2001__megatron-sft-recipes__p0_baseline_fsdp2_full_epoch",
    "hf_trainer/aigoncharov__trainer_state_viz",
    "lightning/0Xero7__slm_training/lightning_logs/version_5",
]


def _runs() -> list:
    runs = [pytest.param(_synthetic_run, id="synthetic")]
    for path in CORPUS_RUNS:
        runs.append(pytest.param(lambda path=path: _corpus_run(path), id=path.split("/")[0]))
    return runs


def _corpus_run(path: str) -> RunData:
    target = CORPUS / path
    if not target.exists():
        pytest.skip(f"corpus run {path} is not here")
    return read(target)


@pytest.mark.parametrize("make", _runs())
def test_a_diagnosis_over_chunks_equals_the_whole_array_diagnosis(make, monkeypatch):
    run = make()
    monkeypatch.setattr(_stats, "CHUNK", 10**9)
    whole = diagnose(run, strict=True)
    assert whole or run.name != "synthetic"  # the synthetic run has spikes to find
    for chunk in (7, 100):
        monkeypatch.setattr(_stats, "CHUNK", chunk)
        assert diagnose(run, strict=True) == whole
