"""Memory headroom: a peak at the edge of the GPU, or far below it (and how far the batch could
grow)."""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import RunData
from core.runlog import RunEvent
from core.shape import RunShape
from tests.core.diagnostics.runs import kinds, only, read, series


def peak(gib: float, name: str = "mem_peak_gib") -> dict:
    steps = np.arange(1, 101)
    return series(**{name: (steps, np.minimum(gib, gib * steps / 50))})


def test_a_gpu_filled_to_99_percent_is_tight(corpus):
    # An 8-GPU FSDP2 run sampled by nvidia-smi: 79.2 of 79.65 GiB in use.
    folder = corpus / "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload"
    run = read(folder / "gpu_metrics.jsonl")
    tight = only(run, "memory_tight")
    assert tight.evidence["counter"] == "device" and tight.evidence["share"] > 0.95
    assert "15-20 %" in tight.remedy


def test_spare_memory_without_the_model_shape_is_a_proportional_estimate():
    found = only(RunData(series=peak(20.0), shape=RunShape(gpu_mem_gib=80.0)), "memory_spare")
    assert found.severity == "info" and found.evidence["estimate"] == "proportional"
    assert found.evidence["growth"] == pytest.approx(0.85 * 80 / 20, rel=0.01)
    assert "proportional estimate" in found.message


def test_spare_memory_with_the_model_shape_is_estimated_by_the_memory_model():
    shape = RunShape(model="meta-llama/Llama-3.1-8B", method="lora", precision="mixed-bf16",
                     micro_batch=2, seq_len=2048, gpu_model="NVIDIA H100 80GB HBM3")
    found = only(RunData(series=peak(24.0), shape=shape), "memory_spare")
    assert found.evidence["estimate"] == "memory model"
    assert found.evidence["capacity_from"].startswith("GPU catalog")
    assert found.evidence["largest_micro_batch"] > 2
    assert f"micro batch 2 → about {found.evidence['largest_micro_batch']}" in found.message


def test_the_highest_counter_decides():
    run = RunData(series={**peak(30.0), **peak(44.0, "mem_reserved_gib")},
                  shape=RunShape(gpu_mem_gib=80.0))
    assert kinds(run) == []  # 44 of 80 GiB reserved: neither tight nor spare
    assert only(RunData(series=peak(30.0), shape=RunShape(gpu_mem_gib=80.0)), "memory_spare")


def test_no_capacity_no_verdict_and_an_oom_says_it_all():
    assert kinds(RunData(series=peak(79.0))) == []
    oom = RunEvent("oom", 50, "CUDA out of memory", {"capacity_gib": 80.0})
    assert "memory_tight" not in kinds(RunData(series=peak(79.0), shape=RunShape(gpu_mem_gib=80.0),
                                               events=[oom]))
