"""Eval loss diverging from the training loss, on corpus runs that overfit and runs that don't."""

from __future__ import annotations

import pytest

from core.checkpoints import Checkpoint
from tests.core.diagnostics.runs import kinds, only, read

HF = "hf_trainer"


def test_whisper_overfits_after_its_first_evaluation(corpus):
    run = read(corpus / HF / "P4P4N1CK__whisper-large-v2-japanese-5k-steps")
    found = only(run, "overfitting")
    assert found.metric == "eval_loss" and found.step_start == 1000 and found.step_end == 5000
    assert found.evidence["best_eval"] == pytest.approx(0.321, abs=1e-3)
    assert found.evidence["last_eval"] == pytest.approx(0.420, abs=1e-3)
    assert found.evidence["train_at_end"] < found.evidence["train_at_best"]
    assert "step 1000" in found.remedy


def test_the_best_checkpoint_before_the_divergence_is_named(corpus):
    folder = corpus / HF / "P4P4N1CK__whisper-large-v2-japanese-5k-steps"
    saved = [Checkpoint(f"/runs/whisper/checkpoint-{s}", s) for s in (500, 1000, 3000, 5000)]
    found = only(read(folder, checkpoints=saved), "overfitting")
    assert found.evidence["best_checkpoint"] == "/runs/whisper/checkpoint-1000"
    assert found.remedy.startswith("Keep /runs/whisper/checkpoint-1000 (step 1000)")


def test_every_eval_set_of_a_multi_set_run_is_checked_and_one_finding_names_them(corpus):
    found = only(read(corpus / HF / "aigoncharov__trainer_state_viz"), "overfitting")
    assert found.metric == "eval/g0_loss" and found.step_start == 401
    assert len(found.evidence["also_diverging"]) == 5


@pytest.mark.parametrize("name", [
    "Jaong__Checkpoint-of-CPT",  # eval loss 1.3 % above its best: noise, not a divergence
    "ananyakaligal__Gemma2B-Finetuning",
    "tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs",
    "Dheena731__tinyLlama-finetune",
])
def test_runs_whose_eval_loss_holds_do_not_overfit(corpus, name):
    assert "overfitting" not in kinds(read(corpus / HF / name))
