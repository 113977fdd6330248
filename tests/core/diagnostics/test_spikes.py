"""Loss spikes, gradient explosions and LR jumps on real runs: a tiny GPT-2 trained on the CPU
that the test makes misbehave with a burst of too-high learning rate, and the same run clean."""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import RunData
from core.diagnostics.spikes import find_spikes
from tests.core.diagnostics.runs import kinds, only, read, series
from tests.producers import train_hf

STEPS, BURST_AT, FACTOR = 80, 50, 40


def lr_burst(at: int, length: int, factor: float):
    """A Trainer callback that multiplies the scheduler's LR by ``factor`` for ``length`` steps."""
    from transformers import TrainerCallback

    class Burst(TrainerCallback):
        def on_step_end(self, args, state, control, lr_scheduler=None, **kwargs):
            if state.global_step in (at, at + length):
                scale = factor if state.global_step == at else 1 / factor
                lr_scheduler.base_lrs = [lr * scale for lr in lr_scheduler.base_lrs]

    return Burst()


def run_tiny(folder, callbacks=None):
    return train_hf(folder, steps=STEPS, eval_steps=STEPS, save_steps=STEPS, logging_steps=1,
                    lr_scheduler_type="constant", load_best_model_at_end=False, callbacks=callbacks)


@pytest.fixture(scope="module")
def burst(tmp_path_factory) -> RunData:
    return read(run_tiny(tmp_path_factory.mktemp("burst"), [lr_burst(BURST_AT, 3, FACTOR)]))


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> RunData:
    return read(run_tiny(tmp_path_factory.mktemp("clean")))


@pytest.mark.slow
def test_a_burst_of_high_lr_is_a_loss_spike_with_the_lr_named(burst):
    spike = only(burst, "loss_spike")
    assert BURST_AT < spike.evidence["peak_step"] <= BURST_AT + 10
    assert spike.evidence["lr_ratio_to_usual"] == pytest.approx(FACTOR)
    assert "learning rate had just risen" in spike.cause
    assert spike.evidence["recovered"]
    assert spike.step_start <= spike.evidence["peak_step"] <= spike.step_end
    loss = burst.series["loss"]
    assert spike.evidence["peak_loss"] > 3 * spike.evidence["median_before"]
    assert spike.evidence["peak_loss"] == loss.values[loss.steps == spike.evidence["peak_step"]][0]


@pytest.mark.slow
def test_the_burst_also_explodes_the_gradient_norm_and_jumps_the_lr(burst):
    grad = only(burst, "grad_explosion")
    assert BURST_AT < grad.evidence["peak_step"] <= BURST_AT + 10
    assert grad.evidence["factor"] >= 10 and grad.evidence["loss_followed"]
    jump = only(burst, "lr_jump")
    assert len(jump.marks) == 1 and BURST_AT < jump.marks[0] <= BURST_AT + 2
    [first] = jump.evidence["jumps"]
    assert first["lr_after"] == pytest.approx(FACTOR * first["lr_before"])


@pytest.mark.slow
def test_the_same_run_without_the_burst_raises_nothing(clean):
    assert kinds(clean) == []


def test_one_hard_batch_that_is_gone_at_the_next_point_is_not_a_spike():
    rng = np.random.default_rng(0)
    values = 2.0 + 0.05 * rng.standard_normal(300)
    values[150] = 2.6  # one outlier, 12 noise units up, back at the next point
    assert find_spikes(values) == []
    values[150:152] = 2.6  # two points: a spike
    assert [s.start for s in find_spikes(values)] == [150]


def test_a_batch_size_change_without_the_lr_following_is_named_as_the_cause():
    steps = np.arange(200)
    rng = np.random.default_rng(1)
    loss = 3.0 - steps / 400 + 0.02 * rng.standard_normal(200)
    loss[120:126] += 1.0
    batch = np.where(steps < 115, 256.0, 1024.0)
    run = RunData(series=series(loss=(steps, loss), lr=(steps, np.full(200, 3e-4)),
                                batch_size=(steps, batch)))
    spike = only(run, "loss_spike")
    assert spike.evidence["batch_size_before"] == 256 and spike.evidence["batch_size"] == 1024
    assert spike.evidence["lr_followed_batch"] is False
    assert "did not follow" in spike.cause and spike.remedy.startswith("When you change the")
    # Scaling the LR with the batch (the article's rule) takes the blame off the batch.
    lr = np.where(steps < 115, 3e-4, 12e-4)
    run.series.update(series(lr=(steps, lr)))
    assert only(run, "loss_spike").evidence["lr_followed_batch"] is True


def _spiky_loss(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    steps = np.arange(n)
    loss = 3.0 - steps / 400 + 0.02 * np.random.default_rng(2).standard_normal(n)
    loss[120:126] += 1.0
    return steps, loss


def test_a_spike_with_the_lr_and_batch_flat_blames_the_data_not_the_lr():
    steps, loss = _spiky_loss()
    lr = 3e-4 * np.where(steps < 100, 1.0, 0.81)  # decayed before the spike: 0.81x the usual
    run = RunData(series=series(loss=(steps, loss), lr=(steps, lr),
                                batch_size=(steps, np.full(200, 8.0))))
    spike = only(run, "loss_spike")
    assert spike.evidence["lr_ratio_to_usual"] == pytest.approx(0.81)
    assert spike.cause == "LR and batch unchanged: likely a bad batch or data outlier."
    assert "too high" not in spike.cause and "batch size" not in spike.cause
    assert spike.remedy.startswith("Look at the batches") and "learning rate" not in spike.remedy
    assert spike.evidence["causes_considered"] == [
        "a learning rate too high: ruled out (LR 0.81× its usual value)",
        "a batch-size change: ruled out (batch constant at 8)",
        "a bad batch or data outlier: likely"]


def test_a_spike_in_a_log_without_lr_or_batch_names_what_cannot_be_told():
    steps, loss = _spiky_loss()
    spike = only(RunData(series=series(loss=(steps, loss))), "loss_spike")
    assert spike.cause == ("The log cannot tell which: a learning rate too high, a batch-size "
                           "change or a bad batch or data outlier.")


@pytest.mark.parametrize("points", [0, 2, 40])
def test_a_loss_that_is_nan_throughout_breaks_no_rule(points):
    from core.diagnostics import diagnose
    from core.runlog import Series

    steps = np.arange(1, points + 1)
    run = RunData(series={"loss": Series("loss", steps, np.full(points, np.nan))}, name="nan")
    assert [f.kind for f in diagnose(run, strict=True)] == (["loss_nan"] if points else [])
