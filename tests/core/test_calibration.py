"""Calibration on synthetic runs whose true coefficients are known."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.calibration import GroupFit, Sample, _terms, fit, held_out_fit, predict_gib, trust
from core.memory import Setup
from core.models import preset

TRUE = np.array([1.3, 0.8, 1.5, 1.2, 0.9])  # activations, logits, offset, reserved, context
GROUP = ("hf", "H100 SXM", "sdpa")
SPECS = ("llama-3.2-1b", "llama-3.2-3b", "qwen2.5-7b", "llama-3.1-8b")


def _runs(noise: float = 0.01, seed: int = 0) -> list[Sample]:
    rng = np.random.default_rng(seed)
    out = []
    for spec_name in SPECS:
        spec = preset(spec_name)
        for batch in (1, 2, 4):
            for seq in (1024, 2048):
                setup = Setup(method="lora", micro_batch=batch, seq_len=seq)
                counter = ("allocated", "reserved", "device")[len(out) % 3]
                peak = predict_gib(_terms(spec, setup), TRUE, counter)[0]
                out.append(Sample(len(out), spec, setup, "H100 SXM", counter,
                                  peak * (1 + rng.normal(0, noise))))
    return out


def test_recovers_known_coefficients():
    theta = np.array(fit(_runs()).groups[GROUP].theta)
    assert theta[0] == pytest.approx(TRUE[0], rel=0.05)  # activations
    assert theta[3] == pytest.approx(TRUE[3], rel=0.03)  # reserved / allocated
    # Logits and offset trade off a little with so few shapes; predictions must still be tight.
    cal = fit(_runs())
    for s in _runs(noise=0.0, seed=1)[:6]:
        assert cal.predict(s.spec, s.setup, s.gpu, s.counter).gib == pytest.approx(s.peak_gib,
                                                                                  rel=0.03)


def test_an_outlier_run_barely_moves_the_fit():
    runs = _runs()
    clean = np.array(fit(runs).groups[GROUP].theta)
    bad = list(runs)
    odd = bad[5]
    bad[5] = Sample(odd.run_id, odd.spec, odd.setup, odd.gpu, odd.counter, odd.peak_gib * 1.8)
    dirty = np.array(fit(bad).groups[GROUP].theta)
    assert dirty[0] == pytest.approx(clean[0], rel=0.05)
    assert dirty[3] == pytest.approx(clean[3], rel=0.05)


def test_an_oom_run_raises_the_prediction():
    spec = preset("llama-3.1-8b")
    # A fused loss: activations, which the few small runs under-learn, dominate the peak.
    setup = Setup(method="lora", micro_batch=8, seq_len=4096, loss="fused")
    truth = predict_gib(_terms(spec, setup), TRUE, "device")[0]
    runs = [s for s in _runs() if s.spec.name == "llama-3.2-1b"][:2]  # little history
    before = fit(runs).predict(spec, setup, "H100 SXM").gib
    assert before < truth  # the prior underestimates these activations
    capacity = before + 0.8 * (truth - before)  # the run died needing more than this
    oom = Sample(999, spec, setup, "H100 SXM", "device", None, capacity)
    after = fit(runs + [oom]).predict(spec, setup, "H100 SXM").gib
    assert after >= 0.97 * capacity > before


def test_interval_widens_away_from_the_recorded_runs():
    cal = fit(_runs())
    near = cal.predict(preset("llama-3.1-8b"), Setup(method="lora", seq_len=2048), "H100 SXM")
    far = cal.predict(preset("llama-3.1-70b"), Setup(method="full", seq_len=8192), "B200")
    width = lambda p: (p.high_gib - p.low_gib) / p.gib  # noqa: E731
    assert near.low_gib < near.gib < near.high_gib
    assert width(far) > 1.5 * width(near)
    assert near.run_ids and set(near.run_ids) <= {s.run_id for s in cal.samples}


def test_small_groups_are_shrunk_toward_their_parent():
    runs = _runs()
    lone = runs[0]
    other = Sample(500, lone.spec, lone.setup.but(attention="eager"), "H100 SXM", "allocated",
                   lone.peak_gib * 3)  # one run in its own attention group
    cal = fit(runs + [other])
    parent = np.array(cal.groups[("hf", "H100 SXM")].theta)
    child = np.array(cal.groups[("hf", "H100 SXM", "eager")].theta)
    assert abs(child[0] - parent[0]) < 1.0  # pulled toward the parent, not to 3x


def test_held_out_fit_errors_beat_the_uncalibrated_model():
    cal = held_out_fit(_runs())
    group = cal.groups[GROUP]
    assert group.held_out_error is not None and group.prior_error is not None
    assert group.held_out_error < 0.05 < group.prior_error


def test_no_history_means_no_calibrated_prediction():
    assert fit([]).predict(preset("llama-3.1-8b"), Setup()) is None
    inference = Setup(method="inference", precision="bf16", optimizer="none")
    assert fit(_runs()).predict(preset("llama-3.1-8b"), inference) is None


def _group(runs: tuple[int, ...], held_out: float | None, prior: float | None,
           experiments: int, noise: float = 0.05) -> GroupFit:
    return GroupFit(("hf",), (1.0,) * 5, ((0.0,) * 5,) * 5, noise, runs, held_out, prior,
                    experiments)


def test_a_group_is_trusted_only_when_held_out_experiments_vouch_for_it():
    assert trust(_group((1, 2, 3), 0.04, 0.2, 2)) == (
        True, "held-out error 4% against 20% uncalibrated, over 2 experiments")
    # Three runs of one experiment (a batch sweep) cannot vouch for another setup.
    assert trust(_group((1, 2, 3), 0.01, 0.2, 1)) == (
        False, "3 runs of one experiment: too few to check on an experiment the fit never saw")
    worse = trust(_group((1, 2), 0.3, 0.2, 2))
    assert worse[0] is False and "no better than 20% uncalibrated" in worse[1]
    wide = trust(_group((1, 2), 0.1, 0.5, 2, noise=0.2))
    assert wide == (False, "held-out error 10% against 50% uncalibrated, but its 90 % interval "
                           "is ±33%, wider than ±25%")
    outside = trust(_group((1, 2), 0.12, 0.5, 2, noise=0.05))
    assert outside == (False, "held-out error 12% is outside its own ±8% interval")


def test_held_out_errors_leave_a_whole_experiment_out():
    runs = [replace(s, experiment=s.spec.name) for s in _runs()]  # one sweep per model
    cal = held_out_fit(runs)
    assert cal.groups[()].experiments == len(SPECS)
    held = runs[0]
    without = fit([s for s in runs if s.experiment != held.experiment])
    expected = without.predict(held.spec, held.setup, held.gpu, held.counter).gib
    assert cal.held_out[(held.run_id, held.counter)] == pytest.approx(expected)
