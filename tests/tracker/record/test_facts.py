"""What the recorders read off live objects: sharding, precision, optimizers, batches, failures."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tracker.record.facts import batch_facts, optimizer_name, precision
from tracker.record.failure import event_kind


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"fsdp": "full_shard offload"}, {"fsdp": "full_shard", "cpu_offload": True}),
        (
            {"fsdp": True, "fsdp_config": {"reshard_after_forward": False}},
            {"fsdp": "shard_grad_op", "cpu_offload": False},
        ),
        ({}, {}),
    ],
)
def test_fsdp_settings_from_real_training_arguments(tmp_path, options, expected):
    from transformers import TrainingArguments

    from tracker.record.hf import _sharding

    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[], **options)
    assert _sharding(args) == expected


def test_zero_stage_and_offload_from_the_deepspeed_config():
    from tracker.record.hf import _sharding

    zero = {"stage": 3, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "none"}}
    args = SimpleNamespace(hf_deepspeed_config=SimpleNamespace(config={"zero_optimization": zero}))
    assert _sharding(args) == {"zero_stage": 3, "cpu_offload": True}


def test_lightning_fsdp_strategy():
    from lightning.pytorch.strategies import FSDPStrategy

    from tracker.record.lightning import _strategy

    strategy = FSDPStrategy(sharding_strategy="SHARD_GRAD_OP", cpu_offload=True)
    assert _strategy(strategy) == {"fsdp": "shard_grad_op", "cpu_offload": True}


@pytest.mark.parametrize(
    ("amp", "weights", "expected"),
    [
        ("bf16", "fp32", "mixed-bf16"),
        ("bf16", "bf16", "bf16"),
        ("fp16", None, "mixed-fp16"),
        (None, "fp32", "fp32"),
        (None, None, None),
    ],
)
def test_precision_is_mixed_only_over_fp32_weights(amp, weights, expected):
    assert precision(amp, weights) == expected


def test_the_real_optimizer_is_named_through_wrappers():
    import torch
    from lightning.pytorch.core.optimizer import LightningOptimizer

    sgd = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9)
    assert optimizer_name(LightningOptimizer(sgd)) == "sgd"
    assert optimizer_name(torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())) == "adamw"


def test_batch_facts_read_shapes_only():
    import torch

    ids = torch.zeros(8, 128, dtype=torch.long)
    assert batch_facts(ids) == (8, 1024, 128)
    assert batch_facts({"attention_mask": ids, "input_ids": ids[:, :64]}) == (8, 512, 64)
    assert batch_facts((torch.zeros(16, 3, 32, 32), torch.zeros(16))) == (16, None, None)
    assert batch_facts([{"pixel_values": torch.zeros(4, 3, 8, 8)}]) == (4, None, None)
    assert batch_facts("not a batch") == (None, None, None)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (SystemExit(0), None),
        (SystemExit(2), "exception"),
        (KeyboardInterrupt(), "interrupted"),
        (MemoryError(), "oom"),
        (RuntimeError("MPS backend out of memory (MPS allocated: 9 GB)"), "oom"),
        (RuntimeError("CUDA error: an illegal memory access"), "exception"),
        (ValueError("x"), "exception"),
    ],
)
def test_event_kinds(exc, kind):
    assert event_kind(exc) == kind
