"""The HF Trainer's real console output (tqdm bars, quoted numbers), captured from a tiny CPU run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tracker.readers import best_reader

TRAIN = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.producers import train_hf
train_hf(Path(sys.argv[1]), steps=12, eval_steps=4, save_steps=4, disable_tqdm=False)
"""


@pytest.fixture(scope="module")
def console_log(tmp_path_factory):
    """stdout and stderr of a real Trainer run, interleaved as a terminal (or nohup) gets them."""
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("hf_console")
    path = folder / "nohup.out"
    with open(path, "wb") as out:
        subprocess.run([sys.executable, "-c", TRAIN.format(root=str(ROOT)), str(folder / "out")],
                       stdout=out, stderr=subprocess.STDOUT, check=True, timeout=600)
    return path


@pytest.mark.slow
def test_real_trainer_console_gives_the_steps_of_trainer_state(console_log):
    """The console has no steps in its dicts; the bar redrawn after each gives them, as trainer_state has them."""
    import json

    assert best_reader(console_log).name == "hf_console"
    run = best_reader(console_log).read(console_log)[0]
    state = json.loads((console_log.parent / "out" / "trainer_state.json").read_text())
    train = [row for row in state["log_history"] if "loss" in row]
    evals = [row for row in state["log_history"] if "eval_loss" in row]
    loss = run.series["loss"]
    assert loss.steps.tolist() == [row["step"] for row in train]
    assert loss.values.tolist() == pytest.approx([row["loss"] for row in train], rel=1e-3)
    assert run.series["eval_loss"].steps.tolist() == [row["step"] for row in evals]
    assert "train_runtime" in run.summary and "lr" in run.series and "grad_norm" in run.series
