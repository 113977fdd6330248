"""Retention deletes only what is provably the run's: never a sibling's, a symlink target's
outside the run, or whatever lies under a home folder that holds one lone log."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.adversarial.conftest import cli, headroom_log, plain_checkpoint
from tracker.checkpoints.ownership import OUTSIDE
from tracker.ingest import ingest

KEEP_ONE = ("--plan-retention", "--keep-best", "0", "--keep-latest", "1", "--json")


def ingested(store, path: Path) -> int:
    report = ingest(store, [path])
    assert report.ok, report.to_dict()
    return report.results[0].run_id


def delete(capsys, store, run_id: int) -> dict:
    code, out, err = cli(capsys, "checkpoints", str(run_id), "--db", store.url, *KEEP_ONE,
                         "--delete", "--yes")
    assert code == 0, err
    return json.loads(out)


def kept_because(plan: dict) -> dict[str, list[str]]:
    return {Path(k["path"]).name: k["reasons"] for k in plan["keep"]}


def test_a_config_naming_the_parent_folder_never_deletes_a_sibling_runs_files(
        tmp_path, store, trash, capsys):
    """(a) ``output_dir: ".."`` once adopted a sibling run's checkpoints and trashed them."""
    exp = tmp_path / "exp"
    headroom_log(exp / "run_a" / "headroom.jsonl", [100, 200, 300], config={"output_dir": ".."})
    own = [plain_checkpoint(exp / "run_a" / f"step_{s}.pt", s) for s in (100, 200, 300)]
    sibling = [plain_checkpoint(exp / "run_b" / f"model_step_{s}.pt", s) for s in (100, 200)]

    plan = delete(capsys, store, ingested(store, exp / "run_a"))

    assert all(p.is_file() for p in sibling)
    reasons = kept_because(plan)
    assert all(OUTSIDE in reasons[p.name] for p in sibling)
    # Inside the run, retention still works.
    assert [Path(p).name for p in plan["trashed"]] == ["step_200.pt", "step_100.pt"]
    assert not own[0].exists() and own[2].is_file()


def test_a_config_naming_an_absolute_folder_only_lists_what_is_there(tmp_path, store, trash, capsys):
    elsewhere = tmp_path / "elsewhere"
    theirs = [plain_checkpoint(elsewhere / f"ckpt_{s}.pt", s) for s in (1, 2, 3)]
    headroom_log(tmp_path / "run" / "headroom.jsonl", [1, 2, 3], config={"save": str(elsewhere)})

    plan = delete(capsys, store, ingested(store, tmp_path / "run"))

    assert all(p.is_file() for p in theirs) and plan["delete"] == []
    assert all(OUTSIDE in why for why in kept_because(plan).values())


def test_a_logged_checkpoint_behind_a_symlink_out_of_the_run_is_never_deleted(
        tmp_path, store, trash, capsys):
    """(b) ``shared -> another disk``: the plan showed a path in the run and trashed the real file."""
    other_disk = tmp_path / "other_disk"
    real = [plain_checkpoint(other_disk / f"x_{s}.pt", s) for s in (10, 20, 30)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "shared").symlink_to(other_disk)
    headroom_log(run / "headroom.jsonl", [10, 20, 30],
                 checkpoints=[(s, f"shared/x_{s}.pt") for s in (10, 20, 30)])

    plan = delete(capsys, store, ingested(store, run))

    assert all(p.is_file() for p in real) and plan["trashed"] == []
    shown = {k["path"] for k in plan["keep"]}
    assert {str(p) for p in real} <= shown  # the real paths, not shared/...
    assert all(OUTSIDE in why for why in kept_because(plan).values())


def test_a_lone_log_in_a_home_folder_adopts_nothing_for_deletion(tmp_path, store, trash, capsys):
    """(c) one log file in a home-like folder once made every checkpoint below it the run's."""
    home = tmp_path / "home"
    log = home / "train.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in (1, 2, 3)))
    strangers = [plain_checkpoint(home / "Downloads" / "model_step_5.pt", 5),
                 plain_checkpoint(home / "projects" / "a" / "weights" / "step_100.pt", 100),
                 plain_checkpoint(home / "projects" / "b" / "weights" / "step_200.pt", 200),
                 plain_checkpoint(home / "old_step_7.ckpt", 7)]

    plan = delete(capsys, store, ingested(store, log))

    assert all(p.is_file() for p in strangers)
    assert plan["delete"] == [] and plan["trashed"] == []


def test_a_checkpoint_another_stored_run_claims_is_never_deleted(tmp_path, store, trash, capsys):
    """A run folder holding another run's log: the inner run's files stay its own. (Below a
    recorder's or a framework's own folder the outer walk does not even go.)"""
    outer = tmp_path / "exp"
    headroom_log(outer / "headroom.jsonl", [100, 300])
    mine = [plain_checkpoint(outer / f"ckpt_{s}.pt", s) for s in (100, 300)]
    headroom_log(outer / "sub" / "train.jsonl", [150, 250])
    theirs = [plain_checkpoint(outer / "sub" / f"ckpt_{s}.pt", s) for s in (150, 250)]
    inner_id = ingested(store, outer / "sub")

    plan = delete(capsys, store, ingested(store, outer))

    assert all(p.is_file() for p in theirs)
    assert f"run {inner_id} claims it too: never deleted here" in kept_because(plan)["ckpt_150.pt"]
    assert not mine[0].exists() and mine[1].is_file()


def test_deletion_checks_again_that_the_file_is_inside_the_run(tmp_path, store, trash, capsys):
    """A checkpoint folder swapped for a symlink between plan and delete is not followed."""
    from tracker.checkpoints import manager

    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1, 2])
    plain_checkpoint(run / "ckpts" / "step_1.pt", 1)
    plain_checkpoint(run / "ckpts" / "step_2.pt", 2)
    run_id = ingested(store, run)
    _, plan = manager.plan_retention(store, run_id, 0, 1)
    assert [Path(c.path).name for c in plan.delete] == ["step_1.pt"]

    outside = tmp_path / "outside"
    victim = plain_checkpoint(outside / "step_1.pt", 1)
    os.rename(run / "ckpts", tmp_path / "moved")
    (run / "ckpts").symlink_to(outside)
    done = manager.delete(store, run_id, plan, confirmed=True)
    assert victim.is_file() and done.trashed == []
    assert OUTSIDE in next(iter(done.failed.values()))
