"""A run launched from an exported config names its plan: the stamp reaches the run's header,
the store and ``headroom runs --json``, beside the peak the run recorded."""

from __future__ import annotations

import json

import pytest

from core import plan_stamp
from tests.producers import train_hf
from tracker.cli import main
from tracker.ingest import ingest
from tracker.record import HFCallback, Recorder

STAMP = "0123456789ab@17.25"


def _tiny_loop(path, **options) -> None:
    import torch

    model = torch.nn.Linear(4, 4)
    with Recorder(path, model=model, every=1, **options) as rec:
        for step in range(1, 3):
            rec.step(step, loss=1.0 / step)


def test_the_recorders_plan_argument_wins_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(plan_stamp.ENV, "ba9876543210@3.00")
    _tiny_loop(tmp_path / "given" / "headroom.jsonl", plan=f"plan-{STAMP}")
    _tiny_loop(tmp_path / "env" / "headroom.jsonl")
    monkeypatch.delenv(plan_stamp.ENV)
    _tiny_loop(tmp_path / "none" / "headroom.jsonl")
    header = {name: json.loads((tmp_path / name / "headroom.jsonl").read_text().splitlines()[0])
              for name in ("given", "env", "none")}
    assert header["given"]["run"]["config"]["plan"] == {"hash": "0123456789ab", "device_gib": 17.25}
    assert header["env"]["run"]["config"]["plan"] == {"hash": "ba9876543210", "device_gib": 3.0}
    assert "plan" not in header["none"]["run"]["config"]


@pytest.mark.slow
def test_an_hf_run_named_after_its_plan_is_linked_to_it(store, tmp_path, capsys):
    out = train_hf(tmp_path / "hf", steps=4, eval_steps=2, save_steps=4,
                   run_name=f"plan-{STAMP}", callbacks=[HFCallback()])
    run_id = ingest(store, [out]).results[0].run_id
    link = store.run(run_id).plan_link()
    assert link["hash"] == "0123456789ab" and link["device_gib"] == 17.25
    capsys.readouterr()  # what training printed
    assert main(["runs", "--json", "--db", str(tmp_path / "test.db")]) == 0
    [listed] = [r for r in json.loads(capsys.readouterr().out) if r["id"] == run_id]
    assert listed["plan"]["hash"] == "0123456789ab"
