"""The copyable resume command quotes the path: a folder name never becomes code or a word."""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

from core.checkpoints import Checkpoint
from core.resume import command
from tests.adversarial.conftest import cli, headroom_log, plain_checkpoint
from tracker.ingest import ingest

HOSTILE = ['a"b', "$(touch PWNED)", "it's", "`id`", 'x\\"); import os; os.system("id', "new\nline",
           "semi; rm -rf ~", "-rf", "sp ace", "ünï\u202ecode"]
PYTHON = ("hf", "lightning", "deepspeed", "dcp", "torch")
SHELL = ("torchtitan", "megatron")


def strings(code: str) -> list[str]:
    """The string literals of a Python command (which must parse as Python)."""
    tree = ast.parse(code)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("kind", PYTHON)
def test_python_commands_hold_the_path_as_one_literal(kind, name):
    path = f"/runs/{name}/checkpoint-5"
    code = command(Checkpoint(path=path, kind=kind, step=5, keys=["model", "optimizer"]))
    found = strings(code)
    assert path in found or str(Path(path).parent) in found


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("kind", SHELL)
def test_shell_commands_hold_the_folder_as_one_word(kind, name):
    path = f"/runs/{name}/step-5"
    words = shlex.split(command(Checkpoint(path=path, kind=kind, step=5)))
    assert str(Path(path).parent) in words
    assert "5" in words


def test_a_hostile_run_folder_name_reaches_the_listing_quoted(tmp_path, store, capsys):
    run = tmp_path / 'run"); __import__("os").system("touch PWNED'
    headroom_log(run / "headroom.jsonl", [5])
    ckpt = plain_checkpoint(run / "step_5.pt", 5)
    report = ingest(store, [run])
    assert report.ok

    code, out, _ = cli(capsys, "checkpoints", "1", "--db", store.url, "--json")

    resume = json.loads(out)["resume"]["command"]
    assert str(ckpt) in strings(resume)
