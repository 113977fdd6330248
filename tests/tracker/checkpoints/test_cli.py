"""``headroom checkpoints``: the listing, its JSON, the retention plan and confirmed deletion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracker.cli import main
from tracker.ingest import ingest

PARTS = {"model", "optimizer", "scheduler", "rng", "scaler", "trainer_state"}


@pytest.fixture
def run(hf_run, store) -> tuple[str, Path, str]:
    report = ingest(store, [hf_run])
    assert report.ok
    return str(report.results[0].run_id), hf_run, store.url


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lists_every_checkpoint_with_the_fields_scripts_need(run, capsys):
    run_id, folder, db = run
    code, out, _ = cli(capsys, "checkpoints", run_id, "--db", db, "--json")
    data = json.loads(out)
    assert code == 0 and data["metric"] == "eval_loss" and data["mode"] == "max"
    assert [c["step"] for c in data["checkpoints"]] == [8, 16, 24]
    for c in data["checkpoints"]:
        assert set(c["has"]) == PARTS and c["complete"] is True and c["kind"] == "hf"
        assert set(c["metrics"]) == {"loss", "eval_loss"}
        assert Path(c["path"]).parent == folder
    best = [c for c in data["checkpoints"] if c["is_best"]]
    latest = [c for c in data["checkpoints"] if c["is_latest"]]
    assert [c["path"] for c in best] == [data["best"]] and [c["step"] for c in latest] == [24]
    assert data["resume"]["step"] == 24 and data["resume"]["warnings"] == []
    assert data["resume"]["command"].startswith("trainer.train(resume_from_checkpoint=")
    assert data["resume_from_best"]["path"] == data["best"]


def test_metric_and_mode_choose_the_best(run, capsys):
    run_id, _, db = run
    _, out, _ = cli(capsys, "checkpoints", run_id, "--db", db, "--json", "--metric", "eval_loss",
                    "--mode", "min")
    data = json.loads(out)
    lowest = min(data["checkpoints"], key=lambda c: c["metrics"]["eval_loss"])
    assert data["best"] == lowest["path"] and data["mode"] == "min"


def test_text_listing_shows_badges_and_the_resume_command(run, capsys):
    run_id, folder, db = run
    (folder / "checkpoint-24" / "optimizer.pt").unlink()
    code, out, _ = cli(capsys, "checkpoints", run_id, "--db", db)
    assert code == 0
    assert "MOSR?T" in out and "M-SR?T" in out
    assert "resume from: " + str(folder / "checkpoint-16") in out
    assert "because: latest complete checkpoint: step 16" in out
    assert "because: step 24 is newer but lacks optimizer" in out and "warning" not in out


def test_retention_plan_deletes_nothing_until_confirmed(run, capsys, trash):
    run_id, folder, db = run
    code, out, _ = cli(capsys, "checkpoints", run_id, "--db", db, "--plan-retention",
                       "--keep-best", "1", "--keep-latest", "1", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["deleted"] is False
    assert [c["step"] for c in plan["delete"]] == [16]
    assert plan["freed_bytes"] == plan["delete"][0]["size_bytes"] > 0
    assert all((folder / f"checkpoint-{s}").is_dir() for s in (8, 16, 24))

    with pytest.raises(SystemExit):
        main(["checkpoints", run_id, "--db", db, "--plan-retention", "--delete"])
    assert "confirm with --yes" in capsys.readouterr().err
    assert (folder / "checkpoint-16").is_dir()


def test_confirmed_deletion_moves_to_the_trash_and_keeps_the_row(run, capsys, trash):
    run_id, folder, db = run
    code, out, _ = cli(capsys, "checkpoints", run_id, "--db", db, "--plan-retention",
                       "--keep-best", "1", "--keep-latest", "1", "--delete", "--yes")
    assert code == 0 and "moved 1 checkpoint(s) to the trash" in out
    assert not (folder / "checkpoint-16").exists()
    assert (trash / "checkpoint-16" / "optimizer.pt").is_file()
    _, out, _ = cli(capsys, "checkpoints", run_id, "--db", db, "--json")
    statuses = {c["step"]: c["status"] for c in json.loads(out)["checkpoints"]}
    assert statuses == {8: "ok", 16: "deleted", 24: "ok"}


def test_a_plan_without_a_ranking_metric_is_refused(run, capsys):
    run_id, _, db = run
    with pytest.raises(SystemExit):
        main(["checkpoints", run_id, "--db", db, "--plan-retention", "--metric", "eval/score"])
    assert "none can be called best" in capsys.readouterr().err
