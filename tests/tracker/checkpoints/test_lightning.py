"""Lightning ModelCheckpoint files (top-k + last) from a real CPU training run."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from core.checkpoints import MISSING_WARNINGS
from core.resume import recommend
from core.retention import plan
from core.runlog import Series
from tracker.checkpoints.discover import discover
from tracker.checkpoints.manager import scan


def _val_loss(version: Path) -> dict[int, float]:
    with open(version / "metrics.csv", newline="") as f:
        return {int(r["step"]): float(r["val_loss"]) for r in csv.DictReader(f) if r["val_loss"]}


def _train_loss(version: Path) -> Series:
    with open(version / "metrics.csv", newline="") as f:
        rows = [(int(r["step"]), float(r["train_loss_step"])) for r in csv.DictReader(f)
                if r["train_loss_step"]]
    return Series("loss", np.array([s for s, _ in rows]), np.array([v for _, v in rows]))


def test_top_k_and_last_with_the_monitored_score_each_was_saved_at(lightning_run):
    found = {Path(c.path).name: c for c in discover(lightning_run, {}, [])}
    files = sorted(p.name for p in (lightning_run / "checkpoints").glob("*.ckpt"))
    assert sorted(found) == files and "last.ckpt" in files and len(files) == 3
    val = _val_loss(lightning_run)
    for c in found.values():
        assert (c.kind, c.status, c.complete) == ("lightning", "ok", True)
        assert c.has["rng"] is False  # Lightning never saves RNG state
        # ModelCheckpoint logs val_loss at global_step - 1 and saves it with the file.
        assert c.metrics["eval_loss"] == pytest.approx(val[c.step - 1])
        assert (c.monitor, c.monitor_mode) == ("val_loss", "min")
    named = {n: int(n.split("step=")[1].removesuffix(".ckpt")) for n in files if "step=" in n}
    assert {n: found[n].step for n in named} == named
    assert found["last.ckpt"].step == max(named.values())
    ranked = sorted((c for n, c in found.items() if n != "last.ckpt"),
                    key=lambda c: c.metrics["eval_loss"])
    assert [c.named_best for c in ranked] == [True, False]


def test_resume_from_last_warns_about_rng_and_says_ckpt_path(lightning_run):
    found = scan(lightning_run, {}, [], {"loss": _train_loss(lightning_run)})
    resume = recommend(found)
    assert Path(resume.checkpoint.path).name == "last.ckpt"
    assert resume.warnings == [MISSING_WARNINGS["rng"]]
    last = lightning_run / "checkpoints" / "last.ckpt"
    assert resume.command == f"trainer.fit(model, ckpt_path={str(last)!r})"
    assert all("loss" in c.metrics and c.metric_steps["loss"] <= c.step for c in found)


def test_a_symlinked_last_protects_its_target(lightning_run):
    folder = lightning_run / "checkpoints"
    newest = max((p for p in folder.glob("epoch=*.ckpt")), key=lambda p: p.stat().st_mtime)
    (folder / "last.ckpt").unlink()
    (folder / "last.ckpt").symlink_to(newest.name)
    found = discover(lightning_run, {}, [])
    link = next(c for c in found if c.link_to)
    assert link.link_to == str(newest) and link.size_bytes == 0
    proposal = plan(found, keep_best=1, keep_latest=1, metric="eval_loss", mode="min")
    kept = {Path(c.path).name: why for c, why in proposal.keep}
    assert "target of the link" in " ".join(kept[newest.name])
    assert "last.ckpt" in kept and all(c.link_to is None for c in proposal.delete)


def test_weights_only_ckpt_is_incomplete(lightning_run):
    import torch

    path = next((lightning_run / "checkpoints").glob("epoch=*.ckpt"))
    state = torch.load(path, weights_only=False)  # the test's own file, written above
    for key in ("optimizer_states", "lr_schedulers"):
        del state[key]
    torch.save(state, path)
    ckpt = next(c for c in discover(lightning_run, {}, []) if c.path == str(path))
    assert ckpt.complete is False and ckpt.missing() == ["optimizer", "scheduler", "rng"]
    assert "saved with save_weights_only" in ckpt.notes
