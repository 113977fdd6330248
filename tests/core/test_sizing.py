"""The sizing glue shared by `headroom size` and the wizard: history, checks, plans."""

from __future__ import annotations

import numpy as np
import pytest

from core.calibration import Sample, _terms, fit, held_out_fit, predict_gib
from core.gpus import find
from core.memory import GIB, Setup, estimate
from core.models import ModelError, parse_count, preset
from core.planner import plan
from core.sizing import Sizer, training_seconds

TRUE = np.array([1.3, 0.8, 1.5, 1.2, 0.9])
H100 = find("h100")


def _history(models=("llama-3.2-1b", "llama-3.2-3b"), method="lora") -> list[Sample]:
    out = []
    for name in models:
        spec = preset(name)
        for batch in (1, 2, 4):
            setup = Setup(method=method, micro_batch=batch, seq_len=2048)
            peak = predict_gib(_terms(spec, setup), TRUE, "device")[0]
            out.append(Sample(len(out), spec, setup, H100.name, "device", peak, name=name,
                              experiment=f"{name} / {method}"))
    return out


def _checked(models=("llama-3.2-1b", "llama-3.2-3b"), method="lora"):
    """A calibration checked on held-out experiments (each model's sweep is one)."""
    return held_out_fit(_history(models, method))


def test_without_history_every_figure_is_analytical():
    spec, setup = preset("llama-3.1-8b"), Setup(method="lora", micro_batch=2)
    sizer = Sizer(spec)
    assert "no recorded run" in sizer.uncalibrated(setup)
    check = sizer.check(setup, H100)
    assert check.calibrated is None
    assert check.device_gib * GIB == pytest.approx(estimate(spec, setup).device)
    assert check.fits == (check.device_gib * 1.15 <= H100.memory_gib)


def test_history_within_three_times_the_size_calibrates():
    spec, setup = preset("llama-3.2-3b"), Setup(method="lora", micro_batch=8, seq_len=2048)
    sizer = Sizer(spec, _checked())
    assert sizer.uncalibrated(setup) == ""
    check = sizer.check(setup, H100)
    assert check.lead == "calibrated" and check.calibrated.trusted
    truth = predict_gib(_terms(spec, setup), TRUE, "device")[0]
    analytical = estimate(spec, setup).device / GIB
    assert abs(check.device_gib - truth) < abs(analytical - truth)
    assert check.calibrated.low_gib < check.device_gib < check.calibrated.high_gib


def test_a_calibration_never_checked_on_another_experiment_is_only_a_hint():
    spec, setup = preset("llama-3.2-3b"), Setup(method="lora", micro_batch=8, seq_len=2048)
    sweep = Sizer(spec, held_out_fit(_history(("llama-3.2-3b",))))  # one model: one experiment
    check = sweep.check(setup, H100)
    assert check.calibrated is not None and not check.calibrated.trusted
    assert "too few to check on an experiment the fit never saw" in check.calibrated.why
    assert check.lead == "analytical"
    assert check.device_gib * GIB == pytest.approx(estimate(spec, setup).required)


def test_far_bigger_models_and_other_kinds_of_run_stay_uncalibrated():
    sizer = Sizer(preset("llama-3.1-70b"), fit(_history()))
    reason = sizer.uncalibrated(Setup(method="lora"))
    assert reason.startswith("no recorded run within 3× this size (nearest: llama-3.2-3b")
    assert sizer.calibrated(Setup(method="lora"), H100.name) is None
    near = Sizer(preset("llama-3.2-1b"), fit(_history()))
    inference = Setup(method="inference", precision="bf16", optimizer="none")
    assert near.uncalibrated(inference) == "no recorded inference run: figure is uncalibrated"


def test_plans_are_the_planners_with_the_calibrated_predictor():
    spec, setup = preset("llama-3.1-8b"), Setup(method="full", micro_batch=1, seq_len=4096)
    sizer = Sizer(spec, _checked(("llama-3.2-3b", "qwen2.5-7b"), method="full"))
    ours = sizer.plans(setup, [H100], 8)
    theirs = plan(spec, setup, [H100], 8, sizer.predictor(setup))
    assert [(p.layout, p.device_gib) for p in ours] == [(p.layout, p.device_gib) for p in theirs]
    uncalibrated = plan(spec, setup, [H100], 8)
    assert [p.device_gib for p in ours] != [p.device_gib for p in uncalibrated]


def test_held_out_fit_keeps_each_samples_held_out_prediction():
    calibration = held_out_fit(_history())
    assert set(calibration.held_out) == {(s.run_id, "device") for s in calibration.samples}
    for s in calibration.samples:
        assert calibration.held_out[(s.run_id, "device")] == pytest.approx(s.peak_gib, rel=0.2)


@pytest.mark.parametrize(("text", "value"), [("7B", 7e9), ("350m", 3.5e8), (" 1.5e9 ", 1.5e9)])
def test_parameter_counts_as_people_write_them(text, value):
    assert parse_count(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["lots", "1.2.3B", "12", ""])
def test_bad_parameter_counts_say_so(text):
    with pytest.raises(ModelError):
        parse_count(text)


def test_training_time_from_throughput():
    assert training_seconds(1e9, 1e4) == pytest.approx(1e5)
    assert training_seconds(1e9, 0.0) is None
