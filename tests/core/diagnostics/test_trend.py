"""The loss curve's course: flat from the start, flat late while the LR is still high, rising,
and a loss that ends worse than guessing (a real CPU run at a far too high LR)."""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import RunData
from tests.core.diagnostics.runs import kinds, only, read, series
from tests.producers import train_hf

STEPS = np.arange(1, 401)


def noisy(curve: np.ndarray, noise: float = 0.02) -> np.ndarray:
    return curve + noise * np.random.default_rng(3).standard_normal(len(curve))


@pytest.mark.slow
def test_a_far_too_high_lr_ends_worse_than_uniform_guessing(tmp_path):
    run = read(train_hf(tmp_path, steps=16, eval_steps=16, save_steps=16, lr=1.0, logging_steps=1,
                        load_best_model_at_end=False))
    rising = only(run, "loss_rising")
    assert rising.evidence["vocab"] == 64
    assert rising.evidence["final_level"] > 1.1 * np.log(64)
    assert rising.evidence["peak_level"] > rising.evidence["final_level"]
    assert "uniform guessing" in rising.message


def test_a_loss_that_never_moves_is_flat_from_the_start():
    run = RunData(series=series(loss=(STEPS, noisy(np.full(400, 2.3)))))
    flat = only(run, "loss_plateau")
    assert flat.evidence["level"] == pytest.approx(2.3, abs=0.01)
    assert flat.step_start == 1 and flat.step_end == 400
    assert "Learning rate too low" in flat.cause


def test_a_loss_that_stops_improving_while_the_lr_is_still_high_has_plateaued():
    loss = noisy(np.maximum(3.0 - STEPS / 100, 1.2))  # flat from step 180 on
    run = RunData(series=series(loss=(STEPS, loss), lr=(STEPS, np.full(400, 3e-4))))
    late = only(run, "loss_plateau_late")
    assert late.severity == "info" and 160 <= late.step_start <= 200
    # The same curve under an LR that decays to zero is a schedule finishing, not a plateau.
    run.series.update(series(lr=(STEPS, 3e-4 * (1 - STEPS / 400))))
    assert kinds(run) == []


def test_a_loss_that_climbs_for_the_last_third_is_rising():
    loss = noisy(np.where(STEPS < 260, 3.0 - STEPS / 200, 1.7 + (STEPS - 260) / 400))
    rising = only(RunData(series=series(loss=(STEPS, loss))), "loss_rising")
    assert 240 <= rising.evidence["best_step"] <= 280
    rise = rising.evidence["final_level"] - rising.evidence["best_level"]
    assert rise == pytest.approx(0.35, abs=0.08)


def test_a_curve_too_noisy_to_read_gets_no_verdict(corpus):
    # TurnGPT logs one batch's loss every 50 steps: it swings between 1.2 and 3.1.
    assert kinds(read(corpus / "lightning/Melissasssss__TurnGPT/lightning_logs/version_0")) == []
