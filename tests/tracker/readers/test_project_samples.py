"""Readers on samples the project ships (tests/data, resources/samples): no corpus needed.

A fresh clone has no ``../shared/corpus``; these keep a test for the readers
whose other tests read corpus files (test_sniff_matrix checks who claims each sample).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracker.readers import best_reader

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "megatron_golden" / "gpt_tiny_tp2_pp1" / "golden_values_dev_h100.json"
SWIFT = DATA / "ms_swift" / "qwen-tiny-lora" / "logging.jsonl"


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
