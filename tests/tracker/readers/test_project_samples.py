"""Readers on samples the project ships (tests/data, resources/samples): no corpus needed.

A fresh clone has no ``../shared/corpus``; these keep a test for the readers
whose other tests read corpus files, and a sniff matrix checks that each
sample is claimed by exactly the reader meant for it, and that no sniffer
fails on any of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracker.readers import READERS, best_reader, scores

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "resources" / "samples"
GOLDEN = DATA / "megatron_golden" / "gpt_tiny_tp2_pp1" / "golden_values_dev_h100.json"
SWIFT = DATA / "ms_swift" / "qwen-tiny-lora" / "logging.jsonl"

# Each sample and the reader meant for it.
EXPECTED = {
    GOLDEN: "megatron_golden",
    SWIFT: "ms_swift",
    SAMPLES / "hf-gpt2-tiny-lr1e-3-cosine": "hf_trainer",
    SAMPLES / "hf-gpt2-tiny-lr1e-3-cosine" / "trainer_state.json": "hf_trainer",
    SAMPLES / "lightning-tiny-lm": "lightning",
    SAMPLES / "lightning-tiny-lm" / "metrics.csv": "lightning",
    SAMPLES / "synthetic-llama3-8b-qlora-rtx4090.jsonl": "headroom_jsonl",
}


@pytest.mark.parametrize("path", list(EXPECTED), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_sample_is_claimed_by_its_reader(path):
    reader = best_reader(path)
    assert reader is not None and reader.name == EXPECTED[path]


def test_no_sniffer_fails_on_any_sample():
    paths = [p for base in (DATA, SAMPLES) for p in base.rglob("*")] + [DATA, SAMPLES]
    for path in paths:
        ranked = scores(path)
        assert len(ranked) == len(READERS)
        assert all(0.0 <= confidence <= 1.0 for confidence, _ in ranked)


def test_megatron_golden_values_give_series_peaks_and_the_shape():
    [run] = best_reader(GOLDEN).read(GOLDEN)
    assert run.series["loss"].steps.tolist() == list(range(1, 51, 5))
    peak = run.series["mem_peak_gib"]
    assert peak.values[0] == pytest.approx(14_250_001_000 / 2**30)
    assert run.series["step_time_s"].steps[0] == 6  # step 1's "nan" was not measured: left out
    shape = run.shape
    assert (shape.n_layers, shape.hidden, shape.n_heads, shape.tp) == (12, 768, 12, 2)
    assert shape.micro_batch == 4 and shape.seq_len == 1024 and shape.framework == "megatron-lm"
    assert run.config["memory_peaks"] == {"mem_peak_gib": "cumulative"}


def test_ms_swift_logs_give_steps_memory_and_the_shape():
    [run] = best_reader(SWIFT).read(SWIFT)
    assert run.series["loss"].steps.tolist() == list(range(1, 11))
    assert run.series["mem_reserved_gib"].values[-1] == pytest.approx(6.31)
    shape = run.shape
    assert shape.method == "lora" and shape.lora_rank == 8 and shape.attention == "flash"
    assert (shape.micro_batch, shape.grad_accum, shape.n_gpus) == (2, 4, 1)
    assert shape.recompute == "full" and shape.framework == "ms-swift"
    assert run.config["best_model_checkpoint"].endswith("checkpoint-10")
