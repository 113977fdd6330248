"""Loss rebound after a resume, on real HF runs resumed from a checkpoint with and without its
optimizer and scheduler state, and on the resumed Lightning run of the corpus."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from core.diagnostics import RunData
from tests.core.diagnostics.runs import kinds, only, read, series
from tests.producers import train_hf

STEPS, SAVED = 80, 50
ARGS = dict(steps=STEPS, save_steps=SAVED, eval_steps=STEPS, lr=3e-2, logging_steps=1,
            load_best_model_at_end=False)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """Two runs: resumed without optimizer.pt and scheduler.pt, and from a complete checkpoint."""
    first = train_hf(tmp_path_factory.mktemp("resume") / "bare", **ARGS)
    complete = first.parent / "complete"
    shutil.copytree(first, complete)
    for name in ("optimizer.pt", "scheduler.pt"):
        (first / f"checkpoint-{SAVED}" / name).unlink()
    for folder in (first, complete):
        train_hf(folder, resume=folder / f"checkpoint-{SAVED}", **ARGS)
    return first, complete


@pytest.mark.slow
def test_resuming_without_optimizer_and_scheduler_rebounds_the_loss_and_restarts_the_lr(resumed):
    run = read(resumed[0])
    rebound = only(run, "resume_rebound")
    assert rebound.step_start == SAVED + 1 and rebound.marks == (SAVED + 1,)
    assert rebound.evidence["loss_after"] > 1.3 * rebound.evidence["loss_before"]
    assert rebound.evidence["lr_after"] == pytest.approx(ARGS["lr"], rel=0.05)
    assert rebound.evidence["lr_after"] > 2 * rebound.evidence["lr_before"]
    # trainer_state.json never says "resumed": the LR jumping back up at a checkpoint does.
    assert "checkpoint" in rebound.evidence["detected_by"]
    assert rebound.step_end > rebound.step_start
    # The LR restart and the loss jump are the rebound's, not findings of their own.
    assert "lr_jump" not in kinds(run) and "loss_spike" not in kinds(run)


@pytest.mark.slow
def test_the_checkpoint_says_what_was_missing(resumed):
    from tracker.checkpoints.manager import scan

    log_run = read(resumed[0])
    found = scan(resumed[0], log_run.config, [], log_run.series)
    run = read(resumed[0], checkpoints=found)
    rebound = only(run, "resume_rebound")
    assert rebound.evidence["checkpoint_step"] == SAVED
    assert rebound.evidence["has_optimizer"] is False and rebound.evidence["has_scheduler"] is False
    assert rebound.cause.startswith(f"The checkpoint {found[0].path}")
    assert "no optimizer state" in rebound.cause and "no scheduler state" in rebound.cause


@pytest.mark.slow
def test_resuming_from_a_complete_checkpoint_raises_nothing(resumed):
    assert kinds(read(resumed[1])) == []


def test_the_resumed_lightning_run_continues_without_a_jump_but_rises_later(corpus):
    logs = corpus / "lightning/0Xero7__slm_training/lightning_logs"
    before = read(logs / "version_0")
    run = read(logs / "version_5", previous=before)
    assert "resume_rebound" not in kinds(run)  # 3.69 before step 140749, 3.70 after
    rising = only(run, "loss_rising")
    assert rising.evidence["resumed_at"] == 140749
    assert rising.evidence["final_level"] > rising.evidence["best_level"]
    assert "resumed at step 140749" in rising.cause


def test_a_log_whose_steps_go_back_resumed_there():
    rng = np.random.default_rng(2)
    first = np.arange(1, 301)
    again = np.arange(201, 401)  # restarted from step 200 and logged those steps again
    loss = np.concatenate([2.5 - first / 600, 2.9 - again / 600]) + 0.01 * rng.standard_normal(500)
    run = RunData(series=series(loss=(np.concatenate([first, again]), loss)))
    rebound = only(run, "resume_rebound")
    assert rebound.step_start == 201
    assert rebound.evidence["detected_by"] == "the logged steps go back"
    jump = rebound.evidence["loss_after"] - rebound.evidence["loss_before"]
    assert jump == pytest.approx(0.4, abs=0.05)


def test_a_resume_the_log_reports_is_checked_against_the_checkpoint_it_names():
    from core.checkpoints import Checkpoint
    from core.runlog import RunEvent

    steps = np.arange(1, 201)
    loss = np.where(steps < 101, 3.0 - steps / 100, 2.6 - (steps - 100) / 300)
    loss = loss + 0.01 * np.random.default_rng(5).standard_normal(200)
    saved = Checkpoint("/ckpt/step-100", 100, has={"model": True, "optimizer": False,
                                                   "scheduler": True})
    resumed = RunEvent("resume", 101, "resumed", {"checkpoint": "/other/host/step-100"})
    run = RunData(series=series(loss=(steps, loss)), checkpoints=[saved], events=[resumed])
    rebound = only(run, "resume_rebound")
    assert rebound.evidence["detected_by"] == "the log reports a resume"
    assert rebound.evidence["checkpoint"] == "/ckpt/step-100"  # same folder name, another machine
    assert rebound.evidence["has_optimizer"] is False and rebound.evidence["has_scheduler"] is True
    assert rebound.cause == ("The checkpoint /ckpt/step-100 has no optimizer state (Adam's "
                             "moments restart from zero).")
