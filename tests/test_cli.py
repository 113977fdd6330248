"""The command line as a user runs it: exit codes, JSON, and a fast start."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from desktop.launcher import main


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_version_and_help_import_nothing_heavy():
    probe = (
        "import sys\n"
        "from desktop.launcher import main\n"
        "for args in (['--version'], ['--help'], ['ingest', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = {'torch', 'transformers', 'tensorboard', 'pandas', 'sqlalchemy', 'PySide6', 'pyarrow'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "headroom 0." in out.stdout


# What each command may not import: the listing never reads a point or runs a rule.
NOT_FOR_LISTING = ("sqlalchemy", "pandas", "pyarrow", "alembic", "numpy",
                   "core.diagnostics.rules",
                   "torch", "transformers", "tensorboard")
# Every other command's module, too: the parser is built for the command asked only.
NOT_FOR_SMALL_INGEST = ("pandas", "pyarrow", "alembic", "torch", "transformers", "tensorboard",
                        "scipy", "tracker.cli.runs", "tracker.cli.size", "tracker.cli.checkpoints",
                        "tracker.cli.team", "tracker.cli.watch", "core.memory", "desktop.gui_command")


def _imported_by(args: list[str], heavy: tuple[str, ...], tmp_path) -> list[str]:
    """Run ``headroom ARGS`` in a fresh interpreter; the ``heavy`` modules it imported."""
    probe = (
        "import sys\n"
        "from desktop.launcher import main\n"
        f"code = main({args!r})\n"
        f"print(code, sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    env = {**os.environ, "HEADROOM_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                         check=True)
    code, _, found = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code == "0", out.stdout + out.stderr
    return json.loads(found.replace("'", '"'))


def test_help_lists_every_command_with_its_line(capsys):
    from tracker.cli import COMMANDS

    code, out, _ = run_cli(capsys, "--help")
    listed = " ".join(out.split())  # argparse wraps long lines
    assert code == 0 and all(f"{name} {line}" in listed for name, (_, line) in COMMANDS.items())
    assert "gui open the desktop app" in listed
    code, out, _ = run_cli(capsys, "take-offline", "--help")  # one module adds two commands
    assert code == 0 and "--from URL" in out


def test_listing_and_a_small_ingest_import_only_what_they_use(tmp_path):
    from tracker.store import Store

    db = str(tmp_path / "cli.db")
    Store(db).close()  # an existing database at the current schema, as on every later call
    log = tmp_path / "small.jsonl"
    log.write_text('{"headroom": 1, "run": {"name": "small"}}\n{"step": 1, "loss": 2.0}\n'
                   '{"step": 2, "loss": 1.5}\n')
    assert _imported_by(["ingest", str(log), "--db", db], NOT_FOR_SMALL_INGEST, tmp_path) == []
    assert _imported_by(["runs", "--db", db], NOT_FOR_LISTING, tmp_path) == []


def test_ingest_runs_and_series_json(capsys, tmp_path):
    db = str(tmp_path / "cli.db")
    log = tmp_path / "run.jsonl"
    log.write_text(
        json.dumps({"headroom": 1, "run": {"name": "cli-run", "shape": {"tp": 2}}}) + "\n"
        + '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": NaN}\n{"step": 3, "loss": 1.5}\n'
    )
    code, out, _ = run_cli(capsys, "ingest", str(log), "--db", db, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["files"][0]["status"] == "ingested"

    code, out, _ = run_cli(capsys, "runs", "--db", db, "--json")
    (run,) = json.loads(out)
    assert run["name"] == "cli-run" and run["shape"] == {"tp": 2}
    assert run["shape_sources"] == {"tp": "headroom header"}
    assert run["metrics"]["loss"] == {
        "count": 3, "min": 1.5, "max": 2.0, "last": 1.5, "first_step": 1, "last_step": 3,
        "first_nonfinite_step": 2, "original_name": "loss",
    }

    code, out, _ = run_cli(capsys, "series", "cli-run", "loss", "--db", db, "--json")
    assert code == 0 and json.loads(out)["values"] == [2.0, None, 1.5]

    code, out, _ = run_cli(capsys, "series", str(run["id"]), "loss", "--db", db)
    assert out.splitlines()[2] == "2\tnan"


def test_ingest_exit_status_is_1_when_a_file_fails(capsys, tmp_path):
    bad = tmp_path / "trainer_state.json"
    bad.write_text('{"log_history": [')
    code, out, _ = run_cli(capsys, "ingest", str(bad), "--db", str(tmp_path / "x.db"))
    assert code == 1 and "truncated JSON" in out and "1 error" in out


def test_unknown_run_and_metric_are_clear_errors(capsys, tmp_path):
    db = str(tmp_path / "e.db")
    code, _, err = run_cli(capsys, "series", "nope", "loss", "--db", db)
    assert code == 1 and "no run named 'nope'" in err


def test_headroom_db_environment_variable(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_DB", str(tmp_path / "env.db"))
    code, out, _ = run_cli(capsys, "runs", "--json")
    assert code == 0 and json.loads(out) == [] and (tmp_path / "env.db").exists()


@pytest.mark.parametrize("args", [["runs", "--bogus"], ["frobnicate"]])
def test_bad_arguments_exit_2(capsys, args):
    code, _, _ = run_cli(capsys, *args)
    assert code == 2


def test_runs_says_a_silent_run_without_an_end_is_crashed(capsys, tmp_path):
    """The liveness rule lives in core: `headroom runs` says what the app says."""
    log = tmp_path / "live.jsonl"
    log.write_text(json.dumps({"headroom": 1, "run": {"name": "silent"}}) + "\n"
                   + json.dumps({"step": 1, "loss": 2.0}) + "\n")
    db = str(tmp_path / "runs.db")
    assert run_cli(capsys, "ingest", str(log), "--db", db)[0] == 0
    code, out, _ = run_cli(capsys, "runs", "--db", db, "--json")
    assert code == 0 and json.loads(out)[0]["status"] == "running"
    code, out, _ = run_cli(capsys, "runs", "--db", db, "--json", "--stale-after", "0")
    assert code == 0 and json.loads(out)[0]["status"] == "crashed?"
