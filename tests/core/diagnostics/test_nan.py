"""NaN/Inf losses on real CPU runs driven to overflow by a huge warm-up LR, loss-scale collapse,
and NaN placeholders that are holes in a log rather than a diverged run."""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import RunData
from core.runlog import RunEvent
from tests.core.diagnostics.runs import kinds, only, read, series
from tests.producers import train_hf


def overflowing(folder, **args) -> RunData:
    """12 steps whose LR warms up towards 1e12: finite for two steps, NaN from the third."""
    return read(train_hf(folder, steps=12, eval_steps=12, save_steps=12, lr=1e12, warmup_steps=10,
                         logging_steps=1, load_best_model_at_end=False, **args))


@pytest.mark.slow
def test_nan_loss_names_its_first_step_and_the_rising_lr(tmp_path):
    run = overflowing(tmp_path, logging_nan_inf_filter=False)
    nan = only(run, "loss_nan")
    assert nan.severity == "critical" and nan.step_start == 3 and nan.metric == "loss"
    assert nan.evidence["seen_in"] == "loss" and not nan.evidence["recovered"]
    assert nan.evidence["lr_rising"] and nan.evidence["lr"] < nan.evidence["lr_peak"]
    assert "warm-up" in nan.cause and "bf16" in nan.remedy
    assert nan.evidence["loss_before"] == pytest.approx(run.series["loss"].values[1])


@pytest.mark.slow
def test_nan_hidden_by_the_trainers_filter_is_found_through_the_gradient_norm(tmp_path):
    run = overflowing(tmp_path)  # logging_nan_inf_filter=True: the log shows loss 0.0
    assert np.isfinite(run.series["loss"].values).all() and run.series["loss"].values[-1] == 0.0
    nan = only(run, "loss_nan")
    assert nan.step_start == 3 and nan.evidence["loss_hidden_by_filter"]
    assert "filtered" in nan.message
    assert kinds(run) == ["loss_nan"]  # the zero loss is not read as a plateau or a drop


def test_nan_placeholders_for_steps_never_run_are_not_a_nan_loss(corpus):
    # Megatron's golden values write "nan" for every metric past the steps the test ran,
    # memory counters included: a hole in the log, not a loss that diverged.
    golden = corpus / "jsonl/megatron_golden_values/gpt3_15b_8t_release_sm"
    run = read(golden / "golden_values_dev_dgx_h100.json")
    assert "loss_nan" not in kinds(run)


def test_a_nan_reported_in_words_without_a_step_is_still_critical():
    run = RunData(series=series(loss=(np.arange(1, 20), np.linspace(3, 2, 19))),
                  events=[RunEvent("nan", None, "Found NaN in loss")])
    nan = only(run, "loss_nan")
    assert nan.step_start is None and "without a step" in nan.message


def test_a_loss_scale_that_falls_to_one_has_collapsed():
    steps = np.arange(200)
    scale = np.full(200, 65536.0)
    scale[150:] = 65536.0 / 2.0 ** np.minimum(np.arange(50) + 1, 16)
    collapse = only(RunData(series=series(loss_scale=(steps, scale))), "loss_scale_collapse")
    assert collapse.evidence["loss_scale_low"] == 1.0 and collapse.step_start == 165


@pytest.mark.parametrize("scale", [
    np.ones(200),  # bf16 runs print a constant 1.0
    # DeepSpeed's opening search from 2**32 down to where steps stop overflowing
    np.concatenate([2.0 ** np.arange(32, 16, -1), np.full(184, 65536.0)]),
    65536.0 / 2.0 ** (np.arange(200) % 3),  # overflow now and then, recovered each time
])
def test_a_loss_scale_that_finds_its_level_has_not_collapsed(scale):
    assert kinds(RunData(series=series(loss_scale=(np.arange(200), scale)))) == []


def test_a_loss_scale_at_its_floor_reported_in_words_is_a_collapse():
    from tracker.readers.crash import CrashScanner

    [event] = CrashScanner().feed("[deepspeed] OVERFLOW! Current loss scale already at minimum: 1")
    event.step = 870
    collapse = only(RunData(series=series(loss=(np.arange(1, 900), np.linspace(3, 2, 899))),
                            events=[event]), "loss_scale_collapse")
    assert collapse.step_start == 870 and "minimum" in collapse.evidence["message"]


def test_a_nan_that_training_survived_is_a_warning_and_fp16_overflow_skips_are_only_noted():
    steps = np.arange(1, 501)
    loss = np.linspace(3.0, 2.0, 500)
    loss[[40, 41, 300]] = np.nan  # three logged steps went bad; training went on
    run = RunData(series=series(loss=(steps, loss)))
    nan = only(run, "loss_nan")
    assert nan.severity == "warning" and nan.evidence["recovered"]
    assert nan.evidence["bad_points"] == 3
    assert "training went on" in nan.message
    # The same in an fp16 run with dynamic loss scaling: the scaler skipped overflowing steps.
    scale = np.where(steps < 41, 65536.0, np.where(steps < 301, 32768.0, 16384.0))
    run.series.update(series(loss_scale=(steps, scale)))
    skips = only(run, "overflow_skips")
    assert skips.severity == "info" and skips.evidence["loss_scale_low"] == 16384.0
    assert kinds(run) == ["overflow_skips"]


def test_many_overflows_are_not_the_scaler_at_work():
    steps = np.arange(1, 501)
    loss = np.linspace(3.0, 2.0, 500)
    loss[::20] = np.nan  # one logged step in twenty
    run = RunData(series=series(loss=(steps, loss), loss_scale=(steps, np.full(500, 1024.0))))
    assert only(run, "loss_nan").severity == "warning"
