"""Checkpoints a Headroom log names, and runs that say which checkpoint they resumed from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.runlog import RunEvent
from tracker.checkpoints import manager
from tracker.checkpoints.lineage import detect
from tracker.ingest import ingest


def write_log(folder: Path, config: dict, lines: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    header = {"headroom": 1, "run": {"name": folder.name, "config": config}}
    path = folder / "headroom.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [header, *lines]) + "\n")
    return path


def save_checkpoint(path: Path, step: int) -> None:
    import torch

    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": {"last_epoch": step}, "step": step}, path)


def parent_run(tmp_path: Path) -> Path:
    """A loop that logged two checkpoints with their eval loss; the first is gone since."""
    folder = tmp_path / "parent"
    save_checkpoint(folder / "ckpt" / "step-20.pt", 20)
    lines = [{"step": s, "loss": 3.0 - s / 10} for s in range(1, 21)]
    lines += [{"step": s, "checkpoint": {"path": f"ckpt/step-{s}.pt", "metrics": {"eval_loss": v}}}
              for s, v in ((10, 2.5), (20, 2.1))]
    return write_log(folder, {}, lines)


def _ingest(store, path: Path) -> int:
    report = ingest(store, [path])
    assert report.ok, report.to_dict()
    return report.results[0].run_id


def test_checkpoints_a_log_names_are_found_or_listed_missing(tmp_path, store):
    run_id = _ingest(store, parent_run(tmp_path))
    found = {c.step: c for c in store.checkpoints(run_id)}
    assert (found[10].status, found[10].logged) == ("missing", True)
    assert found[10].metrics == {"eval_loss": 2.5, "loss": pytest.approx(2.45)}
    assert found[10].path == str(tmp_path / "parent" / "ckpt" / "step-10.pt")
    assert (found[20].status, found[20].kind, found[20].complete) == ("ok", "torch", True)
    assert found[20].metrics["eval_loss"] == 2.1  # the log's own figure wins
    assert found[20].metric_steps == {"loss": 20}  # only figures taken from the series
    assert found[20].metrics["loss"] == pytest.approx(sum(3.0 - s / 10 for s in range(11, 21)) / 10)
    assert manager.report(store, run_id).best.step == 20
    manager.rescan(store, run_id)  # the log's checkpoints survive a rescan without the log
    assert {c.step: c.status for c in store.checkpoints(run_id)} == {10: "missing", 20: "ok"}


def test_a_resumed_run_links_to_the_checkpoint_by_its_tail(tmp_path, store):
    parent = _ingest(store, parent_run(tmp_path))
    written = "/home/someone/elsewhere/parent/ckpt/step-20.pt"  # as logged on another machine
    child_log = write_log(tmp_path / "child", {"trainer": {"resume_from_checkpoint": written}},
                          [{"step": s, "loss": 1.0} for s in range(21, 30)])
    child = _ingest(store, child_log)
    origin = manager.report(store, child).origin
    stored = str(tmp_path / "parent" / "ckpt" / "step-20.pt")
    assert (origin.resumed_from, origin.parent_run, origin.parent_step) == (stored, parent, 20)
    _, proposal = manager.plan_retention(store, parent, keep_best=1, keep_latest=1)
    assert dict((c.step, why) for c, why in proposal.keep)[20][-1] == f"run {child} resumed from it"


@pytest.mark.parametrize("config, events, expected", [
    ({"ckpt_path": "lightning_logs/version_0/checkpoints/last.ckpt"}, [],
     "lightning_logs/version_0/checkpoints/last.ckpt"),
    ({"args": {"load": "/data/megatron/ckpt"}}, [], "/data/megatron/ckpt"),
    ({"checkpoint": {"initial_load_path": "/ckpt/step-1000"}}, [], "/ckpt/step-1000"),
    ({}, [RunEvent("resume", 40, data={"checkpoint": "out/checkpoint-40"})], "out/checkpoint-40"),
    ({"ckpt_path": "last", "resume_from_checkpoint": True}, [], None),
    ({}, [RunEvent("resume", 40, "resumed at step 40")], None),
])
def test_resume_sources_each_framework_states(tmp_path, config, events, expected):
    assert detect(tmp_path / "log.txt", config, events) == expected
