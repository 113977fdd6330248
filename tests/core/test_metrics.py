from __future__ import annotations

import pytest

from core.metrics import GIB, canonical, resolve, to_gib


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
