"""The command line: exact run ids, no LIKE patterns, escaped names, checked numbers, and
a brand-new database created by two processes at once."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.adversarial.conftest import HANG_S, ROOT, cli, headroom_log, plain_checkpoint
from tracker.ingest import ingest


@pytest.fixture
def two_runs(tmp_path, store):
    for name in ("alpha", "beta_1"):
        headroom_log(tmp_path / name / "headroom.jsonl", [1, 2])
    assert ingest(store, [tmp_path / "alpha", tmp_path / "beta_1"]).ok
    return store


@pytest.mark.parametrize("ref", ["%", "_", "''", "", " ", "alph", "a%", "beta_", "%_1"])
def test_a_run_is_named_exactly_or_not_at_all(two_runs, capsys, ref):
    code, _, err = cli(capsys, "series", ref, "loss", "--db", two_runs.url)
    assert code == 1 and err.startswith("headroom: error: no run")


def test_exact_names_and_ids_still_work(two_runs, capsys):
    for ref in ("beta_1", "2"):
        code, out, err = cli(capsys, "series", ref, "loss", "--db", two_runs.url, "--json")
        assert code == 0, err


@pytest.mark.parametrize("ref", ["9" * 30, str(2**63), "\u00b2", "\u0661", "\uff11", "-1"])
def test_huge_and_unicode_digit_ids_are_a_clean_error(two_runs, capsys, ref):
    code, _, err = cli(capsys, "checkpoints", ref, "--db", two_runs.url)
    assert code == 1 and err.startswith("headroom: error: no run"), err


def test_file_names_are_printed_with_control_characters_escaped(tmp_path, store, capsys):
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1, 2, 3])
    for step, name in ((1, "evil\nfake row_step_1.pt"), (2, "\x1b[2Jclear_step_2.pt"),
                       (3, "\u202eexe.step_3.pt")):
        plain_checkpoint(run / name, step)
    assert ingest(store, [run]).ok

    for args in ([], ["--plan-retention", "--keep-best", "0", "--keep-latest", "1"]):
        code, out, err = cli(capsys, "checkpoints", "1", "--db", store.url, *args)
        assert code == 0, err
        assert "\x1b" not in out and "\u202e" not in out
        assert "evil\\nfake row_step_1.pt" in out
        assert "\\x1b[2Jclear_step_2.pt" in out and "\\u202eexe.step_3.pt" in out


@pytest.mark.parametrize("args, message", [
    (["--params", "1e400"], "not a parameter count"),
    (["--params", "nan"], "not a parameter count"),
    (["--model", "llama-3.1-8b", "--kv-heads", "3"], "32 heads are not divisible into 3 KV heads"),
    (["--model", "llama-3.1-8b", "--kv-heads", "64"], "more KV heads (64) than heads (32)"),
])
def test_numeric_flags_are_checked_with_a_clear_message(capsys, args, message):
    code, _, err = cli(capsys, "size", *args, "--no-history")
    assert code == 2 and message in err, err
    assert "math domain error" not in err


def test_two_processes_creating_a_new_database_at_once(tmp_path):
    """Both ran the initial migration: "table run already exists" for one of them."""
    start = time.time() + 2
    code = ("import sys, time\nfrom tracker.store import Store\n"
            f"time.sleep(max(0, {start} - time.time()))\n"
            "for path in sys.argv[1:]:\n    Store(path).close()\n")
    dbs = [str(tmp_path / f"new{i}.db") for i in range(4)]
    children = [subprocess.Popen([sys.executable, "-c", code, *dbs], cwd=ROOT, text=True,
                                 stderr=subprocess.PIPE, env={"PYTHONPATH": str(ROOT),
                                                              "PATH": "/usr/bin:/bin"})
                for _ in range(3)]
    errors = [child.communicate(timeout=3 * HANG_S)[1] for child in children]
    assert [c.returncode for c in children] == [0, 0, 0], errors
    from tracker.store import Store

    assert all(Store(db).run_count() == 0 for db in dbs)
