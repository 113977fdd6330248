"""HF Trainer checkpoints of a real CPU training run: found, inspected, ranked, broken."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.checkpoints import ADAPTER_WARNING, MISSING_WARNINGS
from tracker.checkpoints import manager
from tracker.ingest import ingest


def _state(run: Path) -> dict:
    return json.loads((run / "trainer_state.json").read_text())


def _ingest(store, path: Path) -> int:
    report = ingest(store, [path])
    assert report.ok, report.to_dict()
    return report.results[0].run_id


def _by_step(store, run_id: int, metric=None, mode=None):
    answer = manager.report(store, run_id, metric, mode)
    return answer, {c.step: c for c in answer.checkpoints}


def test_checkpoints_are_found_at_ingest_with_what_they_hold(hf_run, store):
    run_id = _ingest(store, hf_run)
    state = _state(hf_run)
    evals = {e["step"]: e["eval_loss"] for e in state["log_history"] if "eval_loss" in e}
    found = store.checkpoints(run_id)
    assert [c.step for c in found] == sorted(evals) == [8, 16, 24]
    for c in found:
        files = [p for p in Path(c.path).rglob("*") if p.is_file()]
        assert (c.kind, c.status, c.complete, c.weights) == ("hf", "ok", True, "full")
        assert c.has == {"model": True, "optimizer": True, "scheduler": True, "rng": True,
                         "scaler": None, "trainer_state": True}
        assert c.size_bytes == sum(p.stat().st_size for p in files)
        assert c.written_at.timestamp() == pytest.approx(max(p.stat().st_mtime for p in files))
        assert c.metrics["eval_loss"] == pytest.approx(evals[c.step])
        assert c.metric_steps["eval_loss"] == c.step
        assert (c.monitor, c.monitor_mode) == ("eval_loss", "max")  # greater_is_better=True
        assert c.warnings == []
        assert any(n.startswith("training_args.bin needs torch.load(weights_only=False), which "
                                "would build ") and "TrainingArguments" in n for n in c.notes)


def test_best_follows_the_trainer_unless_the_user_chooses(hf_run, store):
    run_id = _ingest(store, hf_run)
    state = _state(hf_run)
    answer, by_step = _by_step(store, run_id)
    assert (answer.choice.metric, answer.choice.mode) == ("eval_loss", "max")
    assert answer.best.named_best
    assert Path(answer.best.path).name == Path(state["best_model_checkpoint"]).name
    assert answer.latest.step == 24 and answer.resume.checkpoint.step == 24
    expected = f"trainer.train(resume_from_checkpoint={str(hf_run / 'checkpoint-24')!r})"
    assert answer.resume.command == expected
    mine, by_step = _by_step(store, run_id, "eval_loss", "min")
    lowest = min(by_step.values(), key=lambda c: c.metrics["eval_loss"])
    assert mine.best is lowest and mine.best is not answer.best


def test_removed_files_make_checkpoints_incomplete_and_move_the_resume_point(hf_run, store):
    run_id = _ingest(store, hf_run)
    (hf_run / "checkpoint-24" / "optimizer.pt").unlink()
    (hf_run / "checkpoint-24" / "scheduler.pt").unlink()
    (hf_run / "checkpoint-16" / "rng_state.pth").unlink()
    manager.rescan(store, run_id)
    answer, by_step = _by_step(store, run_id)
    assert by_step[24].complete is False and by_step[24].missing() == ["optimizer", "scheduler"]
    assert by_step[16].complete is True and by_step[16].has["rng"] is False
    assert answer.latest.step == 24
    assert answer.resume.checkpoint.step == 16
    assert answer.resume.reasons == ["latest complete checkpoint: step 16",
                                     "step 24 is newer but lacks optimizer, scheduler"]
    assert answer.resume.warnings == [MISSING_WARNINGS["rng"]]


def test_a_deleted_checkpoint_the_logs_name_is_listed_as_missing(hf_run, store):
    run_id = _ingest(store, hf_run)
    best = Path(_state(hf_run)["best_model_checkpoint"]).name
    shutil.rmtree(hf_run / best)
    manager.rescan(store, run_id)
    statuses = {Path(c.path).name: c.status for c in store.checkpoints(run_id)}
    gone = next(c for c in store.checkpoints(run_id) if Path(c.path).name == best)
    assert (gone.status, gone.logged, gone.named_best) == ("missing", True, True)
    assert gone.complete is None
    assert gone.path == str(hf_run / best)
    assert sorted(statuses.values()) == ["missing", "ok", "ok"]


def test_a_missing_weight_shard_means_no_model(hf_run):
    from tracker.checkpoints.folders import hf

    folder = hf_run / "checkpoint-16"
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors",
                            "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    ckpt = hf(folder)
    assert ckpt.has["model"] is False and ckpt.complete is False
    assert ckpt.warnings == ["weight shard(s) missing: model-00002-of-00002.safetensors"]


def test_an_adapter_only_checkpoint_warns_that_the_base_must_match(hf_run):
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2LMHeadModel

    from tests.producers import tiny_gpt2_config
    from tracker.checkpoints.folders import hf

    folder = hf_run / "checkpoint-24"
    lora = get_peft_model(GPT2LMHeadModel(tiny_gpt2_config()),
                          LoraConfig(r=2, target_modules=["c_attn"]))
    lora.save_pretrained(folder)
    (folder / "model.safetensors").unlink()
    ckpt = hf(folder)
    assert (ckpt.weights, ckpt.has["model"], ckpt.complete) == ("adapter", True, True)
    assert ckpt.resume_warnings() == [ADAPTER_WARNING]


def test_a_run_resumed_from_another_runs_checkpoint_is_linked(hf_run, tmp_path, store):
    from tests.producers import train_hf

    parent = hf_run / "checkpoint-16"
    child = train_hf(tmp_path / "child", steps=4, eval_steps=2, save_steps=4,
                     resume_from_checkpoint=str(parent))
    first, second = _ingest(store, hf_run), _ingest(store, child)
    origin = manager.report(store, second).origin
    assert (origin.resumed_from, origin.parent_run, origin.parent_step) == (str(parent), first, 16)
    assert manager.report(store, first).origin.children == [second]
    _, plan = manager.plan_retention(store, first, keep_best=1, keep_latest=1)
    kept = {Path(c.path).name: why for c, why in plan.keep}
    assert kept["checkpoint-16"] == [f"run {second} resumed from it"]
    assert plan.delete == []
    store.set_resumed_from(second, None)
    assert manager.report(store, first).origin.children == []


def test_fp16_training_without_a_grad_scaler_file_warns(hf_run):
    import torch

    from tracker.checkpoints.folders import hf

    folder = hf_run / "checkpoint-16"
    args = torch.load(folder / "training_args.bin", weights_only=False)  # the test's own run
    args.fp16 = True  # as if trained with fp16 on a GPU
    torch.save(args, folder / "training_args.bin")
    ckpt = hf(folder)
    assert (ckpt.has["scaler"], ckpt.complete) == (False, True)
    assert ckpt.resume_warnings() == [MISSING_WARNINGS["scaler"]]
    torch.save({"scale": 65536.0, "growth_tracker": 0}, folder / "scaler.pt")
    assert hf(folder).has["scaler"] is True


def test_a_log_dropped_among_past_runs_takes_none_of_their_checkpoints(hf_run, tmp_path, store):
    """A folder of past runs (an HF output folder, a Headroom recorder's folder) with a stray log
    on top: the stray log's run lists the plain ``out/`` beside it, never the runs' checkpoints,
    and each run still finds its own."""
    past = tmp_path / "past"
    shutil.copytree(hf_run, past / "hf-run")
    recorded = past / "recorded"
    recorded.mkdir()
    (recorded / "headroom.jsonl").write_text(json.dumps({"step": 100, "loss": 1.0}) + "\n")
    shutil.copy(next((past / "hf-run").glob("checkpoint-*/model.safetensors")),
                recorded / "step_100.safetensors")
    (past / "out").mkdir()
    shutil.copy(recorded / "step_100.safetensors", past / "out" / "ckpt.safetensors")
    stray = past / "scratch.jsonl"
    stray.write_text("".join(json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in (1, 2, 3)))

    listed = [Path(c.path) for c in manager.report(store, _ingest(store, stray)).checkpoints]

    assert listed == [past / "out" / "ckpt.safetensors"]
    own = manager.report(store, _ingest(store, past / "hf-run")).checkpoints
    assert {Path(c.path).name for c in own} == {p.name for p in hf_run.glob("checkpoint-*")}
