"""Checkpoint policy: metric direction, best and latest, the resume point, retention."""

from __future__ import annotations

import numpy as np
import pytest

from core.checkpoints import (
    ADAPTER_WARNING,
    LOSS_WINDOW,
    MISSING_WARNINGS,
    PARTS,
    Checkpoint,
    best,
    choose_metric,
    latest,
    metric_mode,
    metrics_at,
)
from core.resume import command, recommend
from core.retention import RetentionError, plan
from core.runlog import Series


def ckpt(step, eval_loss=None, missing=(), **kw) -> Checkpoint:
    has = {part: part not in missing for part in PARTS}
    metrics = {} if eval_loss is None else {"eval_loss": eval_loss}
    return Checkpoint(f"/runs/a/checkpoint-{step}", step, kw.pop("kind", "hf"), has=has,
                      metrics=metrics, size_bytes=kw.pop("size_bytes", 100), **kw)


@pytest.mark.parametrize("name, mode", [
    ("eval_loss", "min"), ("loss", "min"), ("eval/wer", "min"), ("val_perplexity", "min"),
    ("eval/accuracy", "max"), ("eval_mean_token_accuracy", "max"), ("eval/rouge1", "max"),
    ("eval/bleu", "max"), ("pass@1", "max"), ("eval_f1", "max"), ("eval/score", None),
    ("eval/gen_len", None),
])
def test_metric_mode_reads_the_name(name, mode):
    assert metric_mode(name) == mode


def test_choose_metric_prefers_user_then_framework_then_eval_loss():
    found = [ckpt(8, 2.0), ckpt(16, 1.5)]
    assert choose_metric(found).metric == "eval_loss"
    assert choose_metric(found).mode == "min"
    stated = choose_metric(found, stated=("eval_accuracy", "max"))
    assert (stated.metric, stated.mode) == ("eval/accuracy", "max")
    assert stated.note == "the metric the training run itself ranked by"
    user = choose_metric(found, "val_loss", None, stated=("eval_accuracy", "max"))
    assert (user.metric, user.mode) == ("eval_loss", "min")


def test_choose_metric_falls_back_to_training_loss_and_asks_when_unsure():
    found = [Checkpoint("/a", 1, metrics={"loss": 2.0})]
    fallback = choose_metric(found)
    assert (fallback.metric, fallback.mode) == ("loss", "min")
    assert "training loss" in fallback.note
    unsure = choose_metric(found, "eval/score")
    assert unsure.mode is None and "min or max" in unsure.note
    assert best(found, unsure.metric, unsure.mode) is None


def test_completeness_and_the_issue_warnings():
    full = ckpt(10)
    assert full.complete is True and full.resume_warnings() == []
    bare = ckpt(20, missing=("optimizer", "scheduler", "rng"), weights="adapter")
    assert bare.complete is False
    assert bare.resume_warnings() == [
        "optimizer state missing: loss will rebound and Adam's moments restart",
        "scheduler missing: LR will restart at warm-up",
        "RNG missing: data order will differ",
        ADAPTER_WARNING,
    ]
    unknown = ckpt(30)
    unknown.has["optimizer"] = None
    assert unknown.complete is None
    gone = ckpt(40, status="missing")
    assert gone.complete is None and not gone.present


def test_best_and_latest():
    found = [ckpt(8, 1.2), ckpt(16, 0.9), ckpt(24, 1.1, missing=("optimizer",)),
             ckpt(32, status="missing")]
    assert best(found, "eval_loss", "min").step == 16
    assert best(found, "eval_loss", "max").step == 8
    assert latest(found).step == 24  # the missing one is not on disk
    assert latest(found, complete=True).step == 16


def test_resume_prefers_the_latest_complete_and_says_why():
    found = [ckpt(8, 1.2), ckpt(16, 0.9), ckpt(24, 1.1, missing=("optimizer", "scheduler"))]
    resume = recommend(found, "eval_loss", "min")
    assert resume.checkpoint.step == 16
    assert resume.reasons == ["latest complete checkpoint: step 16",
                              "step 24 is newer but lacks optimizer, scheduler"]
    assert resume.warnings == []
    assert resume.command == "trainer.train(resume_from_checkpoint='/runs/a/checkpoint-16')"


def test_resume_without_complete_checkpoints_warns_and_from_best_is_explicit():
    found = [ckpt(8, 0.5, missing=("scheduler",)), ckpt(16, 0.9, missing=("optimizer",))]
    resume = recommend(found, "eval_loss", "min")
    assert resume.checkpoint.step == 16
    assert MISSING_WARNINGS["optimizer"] in resume.warnings
    from_best = recommend(found, "eval_loss", "min", from_best=True)
    assert from_best.checkpoint.step == 8
    assert from_best.reasons[0] == "best by eval_loss (min): 0.5 at step 8"
    assert from_best.warnings == [MISSING_WARNINGS["scheduler"]]
    assert recommend([ckpt(8, status="missing")]) is None


@pytest.mark.parametrize("kind, expected", [
    ("lightning", "trainer.fit(model, ckpt_path='/runs/a/checkpoint-5')"),
    ("deepspeed", "engine.load_checkpoint('/runs/a', tag='checkpoint-5')"),
    ("megatron", "--load /runs/a --ckpt-step 5"),
    ("torchtitan", "--checkpoint.enable --checkpoint.folder /runs/a --checkpoint.load_step 5"),
])
def test_resume_command_per_framework(kind, expected):
    assert command(ckpt(5, kind=kind)) == expected


def test_plain_torch_command_loads_the_keys_the_file_has():
    c = ckpt(5, kind="torch", keys=["model_state_dict", "optimizer", "step"])
    assert command(c) == ("ckpt = torch.load('/runs/a/checkpoint-5', map_location='cpu', "
                          "weights_only=True); model.load_state_dict(ckpt['model_state_dict']); "
                          "optimizer.load_state_dict(ckpt['optimizer'])")


def test_retention_keeps_best_latest_resume_point_and_lineage():
    found = [ckpt(s, loss) for s, loss in [(8, 1.5), (16, 0.7), (24, 0.9), (32, 1.0), (40, 1.2)]]
    found.append(ckpt(48, 1.3, missing=("optimizer",)))
    proposal = plan(found, keep_best=1, keep_latest=1, metric="eval_loss", mode="min",
                    protected={"/runs/a/checkpoint-8": "run 7 resumed from it"})
    kept = {c.step: why for c, why in proposal.keep}
    assert kept == {16: ["best by eval_loss"], 48: ["latest"],
                    40: ["latest complete checkpoint (the resume point)"],
                    8: ["run 7 resumed from it"]}
    assert sorted(c.step for c in proposal.delete) == [24, 32]
    assert proposal.freed_bytes == 200


def test_retention_never_drops_the_best_even_with_zero_best_kept():
    found = [ckpt(8, 0.5), ckpt(16, 0.9), ckpt(24, 1.0)]
    proposal = plan(found, keep_best=0, keep_latest=0, metric="eval_loss", mode="min")
    assert {c.step for c, _ in proposal.keep} == {8, 24}
    assert [c.step for c in proposal.delete] == [16]


def test_retention_refuses_without_a_way_to_tell_the_best():
    found = [ckpt(8), ckpt(16)]
    with pytest.raises(RetentionError, match="none can be called best"):
        plan(found, keep_best=1, keep_latest=1, metric="eval_loss", mode="min")
    with pytest.raises(RetentionError):
        plan([ckpt(8, 1.0)], keep_best=1, keep_latest=1, metric="eval/score", mode=None)


def test_retention_leaves_pointer_missing_and_named_best_checkpoints_alone():
    found = [ckpt(8, 0.5), ckpt(16, 0.9, status="lfs"), ckpt(24, 1.0, status="missing"),
             ckpt(32, 1.1, named_best=True), ckpt(40, 1.2), ckpt(48, 1.3)]
    proposal = plan(found, keep_best=1, keep_latest=1, metric="eval_loss", mode="min")
    assert [c.step for c in proposal.delete] == [40]
    assert {c.step for c, _ in proposal.keep} == {8, 32, 48}
    assert "the training framework's own best checkpoint" in dict(
        (c.step, why) for c, why in proposal.keep)[32]


def test_metrics_at_smooths_loss_and_takes_the_eval_at_or_before_the_step():
    steps = np.arange(1, 101)
    loss = Series("loss", steps, np.linspace(3.0, 1.0, 100))
    evals = Series("eval_loss", np.array([25, 50, 75]), np.array([2.5, 2.0, 1.5]))
    speed = Series("eval_runtime", np.array([25, 50, 75]), np.array([9.0, 9.0, 9.0]))
    values, at = metrics_at({"loss": loss, "eval_loss": evals, "eval_runtime": speed}, 60)
    assert values["loss"] == pytest.approx(loss.values[60 - LOSS_WINDOW : 60].mean())
    assert values["eval_loss"] == 2.0 and at == {"loss": 60, "eval_loss": 50}
    assert "eval_runtime" not in values
    assert metrics_at({"eval_loss": evals}, 10) == ({}, {})


def test_metrics_at_ignores_nan_and_handles_repeated_steps_after_a_resume():
    loss = Series("loss", np.array([1, 2, 3, 2, 3, 4]), np.array([5.0, 4.0, np.nan, 4.5, 3.5, 3.0]))
    values, at = metrics_at({"loss": loss}, 3)
    assert values["loss"] == pytest.approx(np.mean([5.0, 4.0, 4.5, 3.5]))
    assert at["loss"] == 3
