"""Pilot first: a recorded, ingested pilot linked to a stage re-sizes the stage.

Time: a tiny GPT-2 really trained on the CPU with the Recorder; its recorded
throughput becomes the stage's MFU. Memory: a pilot whose peaks follow known
coefficients (tests/recorded_runs.py) pulls the stage's figure toward what a
run of the stage's size would reach under them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from core.calibration import _terms, predict_gib
from core.memory import estimate
from core.models import preset
from core.pilot import MIN_SPREAD, SPREAD_PER_DOUBLING, steady_rates
from core.throughput import throughput
from tests.recorded_runs import COUNTER_SERIES, TRUE, write_run
from tracker import projects
from tracker.cli import main
from tracker.ingest import ingest

CPU_PROJECT = """
[project]
name = "tiny pilot"

[[pool]]
gpu = "dev CPU"
count = 1
owned = true
memory_gib = 8
bf16_tflops = 1.0
usd_per_hour = 0.1

[[variant]]
name = "v"

[[variant.stage]]
name = "small"
config = "small/config.json"
method = "full"
precision = "fp32"
tokens = "50M"
seq_len = 16
global_batch = 4
micro_batch = 4

[[variant.stage]]
name = "large"
config = "large/config.json"
method = "full"
precision = "fp32"
tokens = "50M"
seq_len = 16
global_batch = 4
micro_batch = 4
"""


def _gpt2_config(folder, layers: int, hidden: int) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "vocab_size": 64, "n_positions": 64, "n_embd": hidden,
        "n_layer": layers, "n_head": 2, "activation_function": "gelu_new"}))


def _train_pilot(path, steps: int = 60, every: int = 5) -> None:
    """A tiny GPT-2 trained with AdamW on a learnable pattern, recorded every ``every`` steps."""
    import torch
    from transformers import GPT2LMHeadModel

    from tests.producers import tiny_gpt2_config, token_dataset
    from tracker.record import Recorder

    torch.manual_seed(0)
    model = GPT2LMHeadModel(tiny_gpt2_config())
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    rows = token_dataset(steps * 4)
    with Recorder(path, model=model, optimizer=optimizer, every=every,
                  shape={"precision": "fp32", "recompute": "none"}) as rec:
        for step in range(1, steps + 1):
            batch = torch.stack([r["input_ids"] for r in rows[(step - 1) * 4:step * 4]])
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            rec.step(step, loss=loss, batch=batch)
            if step % 20 == 0:
                with torch.no_grad():
                    rec.evaluate(step, eval_loss=model(input_ids=batch, labels=batch).loss.item())


@pytest.mark.slow
def test_a_cpu_pilot_moves_the_stage_time_to_its_recorded_throughput(store, tmp_path, capsys):
    _gpt2_config(tmp_path / "small", layers=2, hidden=32)  # the pilot's own shape
    _gpt2_config(tmp_path / "large", layers=8, hidden=256)
    (tmp_path / "tiny.toml").write_text(CPU_PROJECT)
    stored = projects.save(store, CPU_PROJECT, str(tmp_path))
    project = projects.read(stored.source, stored.base_dir)
    before = projects.plan(project, store, stored).plan.variants[0].stages
    assert before[0].status == "planned" and before[0].rate.mfu == 0.40

    _train_pilot(tmp_path / "pilot" / "headroom.jsonl")
    report = ingest(store, [tmp_path / "pilot"])
    assert report.ok, report.to_dict()
    run_id = report.results[0].run_id
    for name in ("small", "large"):
        projects.link(store, stored, f"v/{name}", run_id, "pilot", card="dev CPU")
    planned = projects.plan(project, store, stored)
    assert planned.notes == []
    small, large = planned.plan.variants[0].stages
    pilot = small.pilot_run
    assert small.status == "piloted" and pilot.gpu.name == "dev CPU" and not pilot.memory

    # The stage now runs at the pilot's recorded speed: its own setup reproduces what it logged.
    recorded = float(np.median(steady_rates(store.series(run_id, "tokens_per_s").values)))
    assert pilot.tokens_per_s == pytest.approx(recorded)
    assert throughput(pilot.spec, pilot.setup, pilot.gpu, small.rate.mfu) == pytest.approx(recorded)
    assert "pilot run" in small.rate.source and small.rate.mfu == pytest.approx(pilot.mfu)
    for old, new in ((before[0], small), (before[1], large)):
        assert new.hours == pytest.approx(old.hours * 0.40 / pilot.mfu, rel=1e-6)
        assert new.plan.tokens_per_s != pytest.approx(old.plan.tokens_per_s)

    # The interval: the pilot's own scatter, widened by the size ratio.
    width = lambda s: s.rate.high / s.rate.mfu - 1  # noqa: E731
    for sp in (small, large):
        ratio = sp.spec.total_params / pilot.spec.total_params
        assert width(sp) == pytest.approx(max(pilot.spread, MIN_SPREAD)
                                          + SPREAD_PER_DOUBLING * abs(math.log2(ratio)))
    assert large.spec.total_params / pilot.spec.total_params > 20
    assert width(large) > width(small) + 4 * SPREAD_PER_DOUBLING
    low, high = large.hours_range
    assert low < large.hours < high and high / low > (1 + width(large)) ** 2 - 1e-9
    # Memory: a CPU run records no peak, so the figure stays analytical and says why.
    assert large.memory.figure == "analytical" and "recorded no memory peak" in large.memory.why

    checks = {c.key: c for c in pilot.checks}
    assert checks["loss_falls"].passed and checks["eval_runs"].passed
    assert "tokens/s" in checks["throughput"].detail

    # The command line shows the same: status, the pilot's MFU, the interval.
    assert main(["plan", str(tmp_path / "tiny.toml"), "--db", store.url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    large_json = out["variants"][0]["stages"][1]
    assert large_json["status"] == "piloted" and large_json["pilot_run"]["run"] == run_id
    assert large_json["hours"] == pytest.approx(large.hours, rel=1e-3)
    assert large_json["hours_low"] < large_json["hours"] < large_json["hours_high"]
    assert "pilot run" in large_json["mfu"]["source"]


MEMORY_PROJECT = """
[project]
name = "memory pilot"

[[pool]]
gpu = "H100 SXM"
count = 1

[[variant]]
name = "v"

[[variant.stage]]
name = "8b"
model = "llama-3.1-8b"
method = "lora"
tokens = "100M"
seq_len = 2048
global_batch = 1
recompute = "none"
attention = "sdpa"

[[variant.stage]]
name = "3b"
model = "llama-3.2-3b"
method = "lora"
tokens = "100M"
seq_len = 2048
global_batch = 2
micro_batch = 2
recompute = "none"
attention = "sdpa"
"""


def test_a_pilot_with_memory_peaks_pulls_the_stage_figure_toward_its_behaviour(store, tmp_path):
    pilot_setup = dict(model="llama-3.2-1b", batch=2, seq=2048)
    from core.memory import Setup

    setup = Setup(method="lora", lora_rank=16, micro_batch=2, seq_len=2048)
    peaks = {c: predict_gib(_terms(preset("llama-3.2-1b"), setup), TRUE, c)[0]
             for c in COUNTER_SERIES}
    folder = tmp_path / "runs"
    folder.mkdir()
    write_run(folder, "pilot-1b", pilot_setup["model"], 2, 2048, peaks)
    assert ingest(store, [folder]).ok
    run_id = store.runs()[0].id
    stored = projects.save(store, MEMORY_PROJECT)
    project = projects.read(stored.source)
    before = projects.plan(project, store, stored).plan.variants[0].stages
    for name in ("8b", "3b"):
        projects.link(store, stored, name, run_id, "pilot")
    after = projects.plan(project, store, stored).plan.variants[0].stages

    for old, new in zip(before, after, strict=True):
        assert old.plan.summary == new.plan.summary == "as asked"  # the same setup, re-sized
        truth = predict_gib(_terms(new.spec, new.plan.setup), TRUE, "device")[0]
        analytical = estimate(new.spec, new.plan.setup).required / 2**30
        assert old.memory.figure == "analytical" and old.plan.device_gib == pytest.approx(analytical)
        assert new.memory.figure == "pilot" and "size ratio" in new.memory.why
        assert abs(new.plan.device_gib - truth) < abs(analytical - truth)  # toward the pilot
        assert new.memory.low_gib < truth < new.memory.high_gib
    # Further from the pilot, a wider interval.
    rel = lambda s: (s.memory.high_gib - s.memory.low_gib) / s.plan.device_gib  # noqa: E731
    assert rel(after[0]) > rel(after[1])
