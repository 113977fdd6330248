"""Diagnostics in the tracker: findings stored at ingest, replaced on re-ingest, read back,
re-run; runs that change each other's verdict; the run a resumed one continues; the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from sqlalchemy import delete

from core.diagnostics.rules import RULES, Rule
from tracker import diagnose as diagnostics
from tracker.cli import main
from tracker.db.schema import FindingRow
from tracker.ingest import ingest


def write_run(path: Path, steps: range, nan_from: int | None = None, shape: dict | None = None,
              tokens_per_s: float | None = None) -> Path:
    """A Headroom JSONL log, as the recorders write it; the loss is NaN from ``nan_from`` on."""
    lines = [json.dumps({"headroom": 1, "run": {"name": path.stem, "shape": shape or {}}})]
    for step in steps:
        diverged = nan_from is not None and step >= nan_from
        row = {"step": step, "loss": math.nan if diverged else 3.0 - step / 1000, "lr": 1e-4}
        if tokens_per_s:
            row["tokens_per_s"] = tokens_per_s
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ingested(store, path: Path) -> int:
    result = ingest(store, [path]).results[0]
    assert result.status in ("ingested", "updated"), result.reason
    return result.run_id


def test_ingest_stores_each_runs_findings(store, tmp_path):
    run_id = ingested(store, write_run(tmp_path / "diverged.jsonl", range(1, 101), nan_from=60))
    clean_id = ingested(store, write_run(tmp_path / "clean.jsonl", range(1, 101)))
    [found] = store.findings(run_id)
    assert found.kind == "loss_nan" and found.step_start == 60 and found.marks == (60,)
    assert found.metric == "loss" and found.evidence["seen_in"] == "loss"
    assert store.findings(clean_id) == []
    assert store.severities() == {run_id: "critical"}


def test_a_grown_log_replaces_its_findings(store, tmp_path):
    path = write_run(tmp_path / "growing.jsonl", range(1, 101))
    run_id = ingested(store, path)
    assert store.findings(run_id) == []
    write_run(path, range(1, 151), nan_from=120)
    assert ingested(store, path) == run_id
    write_run(path, range(1, 201), nan_from=120)
    ingested(store, path)
    assert [f.kind for f in store.findings(run_id)] == ["loss_nan"]


def test_a_failing_rule_is_logged_and_the_others_still_report(store, tmp_path, monkeypatch, caplog):
    def broken(run):
        raise ValueError("a detector bug")

    monkeypatch.setattr("core.diagnostics.rules.RULES", (Rule("broken", broken, {}),) + RULES)
    run_id = ingested(store, write_run(tmp_path / "nan.jsonl", range(1, 51), nan_from=30))
    assert [f.kind for f in store.findings(run_id)] == ["loss_nan"]
    assert "diagnostic rule 'broken' failed" in caplog.text


def test_a_run_on_fewer_gpus_changes_the_verdict_on_the_run_that_used_more(store, tmp_path):
    model = {"n_params": 8_030_261_248, "seq_len": 4096, "micro_batch": 2}
    big = ingested(store, write_run(tmp_path / "eight.jsonl", range(1, 101),
                                    shape={**model, "n_gpus": 8}, tokens_per_s=8 * 1500.0))
    assert store.findings(big) == []  # nothing to compare with yet
    small = ingested(store, write_run(tmp_path / "two.jsonl", range(1, 101),
                                      shape={**model, "n_gpus": 2}, tokens_per_s=2 * 4000.0))
    [scaling] = store.findings(big)
    assert scaling.kind == "scaling" and scaling.evidence["peer"] == f"run {small} (two)"
    assert store.findings(small) == []


def test_a_run_that_starts_where_another_stopped_continues_it(store, corpus):
    logs = corpus / "lightning/0Xero7__slm_training/lightning_logs"
    first, resumed = (ingested(store, logs / v) for v in ("version_0", "version_5"))
    with store.session() as s:
        data = diagnostics.run_data(s, resumed)
        assert data.previous is not None and data.previous.name == store.run(first).name
        assert diagnostics.run_data(s, first).previous is None


def test_rediagnose_rebuilds_findings_from_the_stored_runs(store, tmp_path):
    run_id = ingested(store, write_run(tmp_path / "nan.jsonl", range(1, 51), nan_from=30))
    with store.session() as s:
        s.session.execute(delete(FindingRow))
    assert store.findings(run_id) == []
    assert [f.kind for f in store.diagnose()[run_id]] == ["loss_nan"]
    assert [f.kind for f in store.findings(run_id)] == ["loss_nan"]


def test_the_cli_prints_findings_as_text_and_json(store, tmp_path, capsys):
    run_id = ingested(store, write_run(tmp_path / "nan.jsonl", range(1, 51), nan_from=30))
    ingested(store, write_run(tmp_path / "clean.jsonl", range(1, 51)))
    db = ["--db", store.url]
    assert main(["diagnose", str(run_id), *db]) == 0
    text = capsys.readouterr().out
    assert "[critical] loss_nan  steps 30-50\n" in text
    assert "remedy:" in text and "evidence:" in text
    assert main(["diagnose", "nan", "--json", *db]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    [finding] = entry["findings"]
    assert entry["run"] == run_id and finding["title"] == "Loss NaN/Inf"
    assert {"kind", "severity", "step_start", "step_end", "message", "cause", "remedy",
            "evidence", "metric", "marks"} <= finding.keys()
    assert main(["diagnose", "--all", "--rerun", *db]) == 0
    listing = capsys.readouterr().out
    assert "loss_nan" in listing and "1 of 2 runs have no findings" in listing


def test_the_cli_refuses_an_unknown_run(store, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["diagnose", "nope", "--db", store.url])
    assert exit_.value.code == 1 and "no run named 'nope'" in capsys.readouterr().err


def test_lineage_names_the_run_a_resumed_one_continues(store, tmp_path):
    first = write_run(tmp_path / "first.jsonl", range(1, 101))
    with open(first, "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": 100, "checkpoint": {"path": "ckpt/step-100"}}) + "\n")
    first_id = ingested(store, first)
    [saved] = store.checkpoints(first_id)
    second_id = ingested(store, write_run(tmp_path / "second.jsonl", range(1, 101)))
    store.set_resumed_from(second_id, saved.path)
    with store.session() as s:
        data = diagnostics.run_data(s, second_id)
    assert data.previous is not None and data.previous.name == "first"
    assert [c.path for c in data.previous.checkpoints] == [saved.path]
