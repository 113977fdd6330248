from __future__ import annotations

import pytest

from core.metrics import GIB, canonical, resolve, size_text, to_gib


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        ("loss", "loss"),
        ("train_loss_step", "loss"),
        ("lm loss", "loss"),
        ("learning_rate", "lr"),
        ("lr-AdamW", "lr"),
        ("lr-AdamW/pg1", "lr"),
        ("val_loss", "eval_loss"),
        ("eval_loss", "eval_loss"),
        ("eval_accuracy", "eval/accuracy"),
        ("eval_g0_loss", "eval/g0_loss"),
        ("num_input_tokens_seen", "tokens_seen"),
        ("  grad norm ", "grad_norm"),
        ("my_custom_metric", "my_custom_metric"),
    ],
)
def test_canonical_names(original, expected):
    assert canonical(original) == expected


def test_units_scale_to_canonical():
    assert resolve("elapsed time per iteration (ms)").scale == pytest.approx(1e-3)
    assert resolve("mem-max-allocated-bytes").scale * 3 * GIB == pytest.approx(3.0)
    assert to_gib(1024, "MiB") == pytest.approx(1.0)
    assert to_gib(1.0, "GB") == pytest.approx(1e9 / GIB)


@pytest.mark.parametrize(
    ("original", "name"),
    [
        ("lr-AdamW/pg2", "lr"),  # LearningRateMonitor, second param group
        ("lr-AdamW-momentum", "lr-AdamW-momentum"),  # its momentum is not a learning rate
        ("grad_norm_step", "grad_norm"),  # Lightning's on_step copy of a known metric
        ("train_perplexity_step", "train_perplexity_step"),  # ... of an unknown one: as written
        ("global_step", "global_step"),
        ("DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.peak", "mem_peak_gib"),
        ("learning-rate", "lr"),  # Megatron's TensorBoard tags
        ("batch-size", "batch_size"),
    ],
)
def test_lightning_and_megatron_tensorboard_names(original, name):
    assert resolve(original).name == name


def test_device_stats_bytes_become_gib():
    alias = resolve("DeviceStatsMonitor.on_train_batch_start/reserved_bytes.all.peak")
    assert alias.name == "mem_reserved_gib" and alias.scale * GIB == pytest.approx(1.0)


@pytest.mark.parametrize(("n_bytes", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (3.4 * 2**20, "3.4 MiB"),
    (15.25 * 2**30, "15.2 GiB"), (3 * 2**40, "3072.0 GiB"),
])
def test_size_text_uses_binary_units_up_to_gib(n_bytes, text):
    assert size_text(n_bytes) == text
