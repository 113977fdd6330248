"""Calibration samples from a real store, filled by ingesting Headroom JSONL logs."""

from __future__ import annotations

import json

import pytest

from tests.recorded_runs import COUNTER_SERIES, TRUE, truth, write_run
from tracker.calibration import collect
from tracker.cli import main
from tracker.ingest import ingest


@pytest.fixture
def history(tmp_path, store):
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, (model, batch, seq) in enumerate([("llama-3.2-1b", 1, 1024), ("llama-3.2-1b", 4, 2048),
                                             ("llama-3.2-3b", 2, 1024), ("qwen2.5-7b", 1, 2048),
                                             ("llama-3.1-8b", 2, 2048)]):
        peaks = {c: truth(model, batch, seq, c) for c in COUNTER_SERIES}
        write_run(runs, f"run{i}", model, batch, seq, peaks)
    write_run(runs, "no-shape", None, 1, 1024, {"allocated": 10.0},
              shape_extra={"model": "my-own-model"})
    write_run(runs, "oom", "llama-3.1-8b", 16, 4096, {}, oom=79.6)
    report = ingest(store, [runs])
    assert report.ok, report.to_dict()
    return store


def test_each_counter_of_each_run_is_a_sample(history):
    found = collect(history)
    peaks = [s for s in found.samples if s.peak_gib is not None]
    assert len(peaks) == 10 and {s.counter for s in peaks} == {"allocated", "reserved"}
    assert all(s.gpu == "H100 SXM" and s.setup.framework == "hf" for s in found.samples)
    oom = [s for s in found.samples if s.oom_capacity_gib]
    assert len(oom) == 1 and oom[0].oom_capacity_gib == 79.6
    reasons = list(found.skipped.values())
    assert any("no architecture" in r for r in reasons)


def test_fit_command_reports_groups_and_errors(history, capsys):
    db = history.url
    assert main(["fit", "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    labels = [g["label"] for g in out["groups"]]
    assert "hf x H100 SXM x sdpa" in labels
    group = next(g for g in out["groups"] if g["label"] == "hf x H100 SXM x sdpa")
    assert group["coefficients"]["activations"] == pytest.approx(TRUE[0], rel=0.15)
    assert group["held_out_error"] < group["uncalibrated_error"]
    assert len(out["runs_used"]) == 6


def test_size_command_uses_the_history(history, capsys):
    args = ["size", "--db", history.url, "--model", "llama-3.1-8b", "--method", "lora",
            "--batch", "2", "--seq", "2048", "--gpu", "h100", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    cal = out["calibrated"]
    assert cal is not None and cal["low_gib"] < cal["gib"] < cal["high_gib"]
    assert cal["runs"] and cal["group"] == "hf x H100 SXM x sdpa"
    expected = truth("llama-3.1-8b", 2, 2048, "reserved")
    assert cal["reserved_gib"] == pytest.approx(expected, rel=0.1)


def test_excluded_runs_stay_out_of_the_fit(history, capsys):
    run = history.find_run("run4")
    history.set_exclude_from_fit(run.id, True)
    found = collect(history)
    assert run.id not in {s.run_id for s in found.samples}
    assert found.skipped[run.id] == "excluded from the fit"
    assert main(["fit", "--db", history.url, "--include", "run4", "--json"]) == 0
    assert run.id in json.loads(capsys.readouterr().out)["runs_used"]


def test_a_run_launched_from_a_plan_is_a_sample_and_fit_says_how_the_plan_fared(history, tmp_path,
                                                                               capsys):
    peaks = {c: truth("llama-3.1-8b", 4, 2048, c) for c in COUNTER_SERIES}
    predicted = round(peaks["reserved"] * 1.1, 2)
    path = write_run(tmp_path / "runs", "planned", "llama-3.1-8b", 4, 2048, peaks,
                     config={"plan": {"hash": "0123456789ab", "device_gib": predicted}})
    assert ingest(history, [path]).ok
    assert main(["fit", "--db", history.url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    planned = history.find_run("planned").id
    assert planned in out["runs_used"]
    [outcome] = out["plans"]
    assert outcome["run"] == planned and outcome["plan"] == "0123456789ab"
    assert outcome["counter"] == "reserved" and outcome["predicted_gib"] == predicted
    # write_run's last record is 1.05 x the reserved peak: the plan was ~4.8 % high
    assert outcome["error"] == pytest.approx(1.1 / 1.05 - 1, abs=0.002)
    assert main(["fit", "--db", history.url]) == 0
    assert "Runs launched from a plan" in capsys.readouterr().out
