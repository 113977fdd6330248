"""Real runs' checkpoint folders: trees rebuilt from the corpus listings, and the corpus states.

The listings name every file of two published HF output folders. The tests
rebuild each tree in a temporary folder: Git-LFS pointer files where the
repository holds pointers, the corpus's own files where it has them, each
checkpoint's trainer_state.json cut from the run's real log history where it
does not, and empty files (``{}`` for JSON) of the listed size for the rest.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from core.checkpoints import ADAPTER_WARNING, LFS_WARNING
from core.resume import why_none
from core.retention import plan
from tracker.checkpoints import manager
from tracker.ingest import ingest

GEMMA = "hf_trainer/tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs"
MISTRAL = "hf_trainer/syGOAT__Mistral-v0.2-Translator-bf16"
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin")


def rebuild(corpus_run: Path, into: Path) -> Path:
    state = json.loads((corpus_run / "trainer_state.json").read_text())
    for line in (corpus_run / "checkpoint_listing.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        size, rel = line.split("\t", 1)
        target, real = into / rel, corpus_run / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if real.is_file():
            shutil.copy(real, target)
        elif size == "BAD" or (int(size) < 200 and target.suffix in WEIGHT_SUFFIXES):
            target.write_text(f"version https://git-lfs.github.com/spec/v1\n"
                              f"oid sha256:{'0' * 64}\nsize {1 << 20}\n")
        elif target.name == "trainer_state.json":
            step = int(re.search(r"checkpoint-(\d+)", rel).group(1))
            history = [e for e in state["log_history"] if e.get("step", 0) <= step]
            target.write_text(json.dumps({"global_step": step, "log_history": history}))
        elif target.suffix == ".json":
            target.write_text("{}".ljust(int(size)))
        else:
            with open(target, "wb") as f:
                f.truncate(int(size))
    return into


def _steps(listing: Path) -> list[int]:
    return sorted({int(m) for m in re.findall(r"checkpoint-(\d+)/", listing.read_text())})


def _ingest(store, folder: Path) -> int:
    report = ingest(store, [folder])
    assert report.ok, report.to_dict()
    return report.results[0].run_id


def test_lfs_pointer_checkpoints_are_listed_as_such(corpus, tmp_path, store):
    tree = rebuild(corpus / GEMMA, tmp_path / "outputs")
    run_id = _ingest(store, tree)
    answer = manager.report(store, run_id)
    assert [c.step for c in answer.checkpoints] == _steps(corpus / GEMMA / "checkpoint_listing.txt")
    state = json.loads((corpus / GEMMA / "trainer_state.json").read_text())
    evals = {e["step"]: e["eval_loss"] for e in state["log_history"] if "eval_loss" in e}
    for c in answer.checkpoints:
        assert (c.status, c.weights, c.complete) == ("lfs", "adapter", True)
        assert c.has["optimizer"] and c.has["scaler"] and c.has["rng"]
        assert any("Git-LFS pointer" in note for note in c.notes)
        at = max(s for s in evals if s <= c.step)
        assert c.metrics["eval_loss"] == pytest.approx(evals[at])
    # best_model_checkpoint was written on Kaggle: /kaggle/working/outputs/checkpoint-3765.
    assert answer.best.named_best and answer.best.step == state["best_global_step"]
    assert answer.resume.checkpoint.step == max(evals)
    assert answer.resume.warnings == [ADAPTER_WARNING, LFS_WARNING]
    proposal = plan(answer.checkpoints, 1, 1, "eval_loss", "min")
    assert proposal.delete == [] and proposal.keep == []  # pointers free nothing


def test_checkpoints_without_weights_or_optimizer_are_incomplete(corpus, tmp_path, store):
    tree = rebuild(corpus / MISTRAL, tmp_path / "mistral")
    run_id = _ingest(store, tree)
    found = store.checkpoints(run_id)
    assert [c.step for c in found] == _steps(corpus / MISTRAL / "checkpoint_listing.txt")
    for c in found:
        assert c.status == "ok" and c.complete is False
        assert c.missing() == ["model", "optimizer", "scheduler", "rng"]
    answer = manager.report(store, run_id)
    assert answer.resume is None  # never "resume from here" beside "nothing to resume from"
    assert why_none(answer.checkpoints).endswith("none on disk holds the model weights.")


def test_a_best_checkpoint_named_by_a_relative_path_is_missing(corpus):
    from tracker.checkpoints.discover import discover

    source = corpus / "hf_trainer/ananyakaligal__Gemma2B-Finetuning/checkpoint-68559"
    state = json.loads((source / "trainer_state.json").read_text())
    found = discover(source / "trainer_state.json", {}, [])
    on_disk, = (c for c in found if c.status == "ok")
    assert on_disk.step == state["global_step"] and on_disk.has["trainer_state"]
    found = discover(source / "trainer_state.json",
                     {"best_model_checkpoint": state["best_model_checkpoint"]}, [])
    gone, = (c for c in found if c.status == "missing")
    assert gone.named_best and gone.step == 45706
    assert gone.path == str(source.parent / "results" / "checkpoint-45706")


def test_a_missing_checkpoint_stays_one_across_rescans(corpus, store):
    folder = corpus / "hf_trainer/ananyakaligal__Gemma2B-Finetuning"
    run_id = _ingest(store, folder)
    # A rescan takes the stored (absolute) path of the missing checkpoint as the logs' word.
    for _ in range(2):
        found = manager.rescan(store, run_id)
        assert sorted(c.path for c in found) == [str(folder / "checkpoint-68559"),
                                                 str(folder / "results" / "checkpoint-45706")]
    gone, = (c for c in found if c.status == "missing")
    assert gone.named_best and gone.step == 45706


def test_a_best_checkpoint_from_another_machine_is_missing_here(corpus, store):
    folder = corpus / "hf_trainer/P4P4N1CK__whisper-large-v2-japanese-5k-steps"
    run_id = _ingest(store, folder)
    written = json.loads((folder / "trainer_state.json").read_text())["best_model_checkpoint"]
    gone, = store.checkpoints(run_id)
    assert (gone.status, gone.step, gone.named_best) == ("missing", 3000, True)
    assert gone.path == str(folder / "checkpoint-3000")
    assert gone.notes == [f"named by the run's logs as {written}; the files are not here"]
    assert "eval/wer" in gone.metrics  # the eval at step 3000, from the run's log history
