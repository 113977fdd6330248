"""Hostile inputs for the tracker, each made by a generator inside its test.

Nothing binary is committed: every file is written by the test that uses it.
An input that could kill or freeze the interpreter (a segfault in a C parser,
an open that blocks forever) is tried in a child process with a timeout, so a
crash or a hang is a failed test, never a dead test run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every hostile input must be dealt with well inside this (the bar for a hang).
HANG_S = 10


def isolated(code: str, timeout: float = HANG_S) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a crash or a hang fails the calling test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: still running after {timeout} s")
    if done.returncode < 0:
        pytest.fail(f"crashed with {signal.Signals(-done.returncode).name}:\n{done.stderr[-2000:]}")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def cli_code(*args: str) -> str:
    """Child-process code that runs ``headroom ARGS`` and exits with its status."""
    return f"import sys\nfrom tracker.cli import main\nsys.exit(main({list(args)!r}))\n"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``headroom ARGS`` in this process: exit code, stdout, stderr (a traceback fails the test)."""
    from tracker.cli import main

    try:
        code = main(list(args))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_tracebacks(caplog):
    """Fails the test when anything logged a traceback (one line per bad file, no more)."""
    yield
    logged = [r for r in caplog.records if r.exc_info]
    assert not logged, f"traceback logged: {logged[0].getMessage()}"


def headroom_log(path: Path, steps, config: dict | None = None, checkpoints=()) -> Path:
    """A Headroom JSONL log with a loss per step and optional checkpoint records."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"headroom": 1, "run": {"name": path.parent.name, "config": config or {}}}]
    lines += [{"step": s, "loss": 10.0 / s} for s in steps]
    lines += [{"step": s, "checkpoint": {"path": p}} for s, p in checkpoints]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def plain_checkpoint(path: Path, step: int) -> Path:
    """A small single-file checkpoint (a pickled dict, as torch's legacy format is)."""
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"model": {}, "step": step}, protocol=2))
    return path


def pytest_collection_modifyitems(items):
    """Every hostile-input test gets a hard timeout: a hang fails it instead of stalling CI."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(4 * HANG_S))
