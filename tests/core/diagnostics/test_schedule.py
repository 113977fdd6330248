"""LR-schedule anomalies: warm-up restarts and jumps, and schedules that rise on purpose."""

from __future__ import annotations

import numpy as np

from core.diagnostics import RunData
from tests.core.diagnostics.runs import kinds, only, series

STEPS = np.arange(1, 601)


def warmup_cosine(steps: np.ndarray, length: int, warmup: int = 20,
                  peak: float = 3e-4) -> np.ndarray:
    t = (steps - 1) % length
    return np.where(t < warmup, peak * (t + 1) / warmup,
                    peak * 0.5 * (1 + np.cos(np.pi * (t - warmup) / (length - warmup))))


def test_a_schedule_that_restarts_every_epoch_is_a_warmup_restart():
    # A scheduler built for 200 steps but stepped over 600: it starts over twice.
    run = RunData(series=series(lr=(STEPS, warmup_cosine(STEPS, 200))))
    found = only(run, "lr_restart")
    assert found.evidence["warmup_restarts"] == 2 and len(found.marks) == 2
    assert all(200 < m <= 203 or 400 < m <= 403 for m in found.marks)


def test_one_warmup_and_a_decay_is_fine_and_so_is_a_schedule_meant_to_restart():
    assert kinds(RunData(series=series(lr=(STEPS, warmup_cosine(STEPS, 600))))) == []
    restarts = RunData(series=series(lr=(STEPS, warmup_cosine(STEPS, 200))),
                       config={"lr_scheduler_type": "cosine_with_restarts"})
    assert kinds(restarts) == []


def test_a_manual_lr_raise_mid_run_is_a_jump():
    lr = np.where(STEPS < 300, 1e-4, 5e-4)
    found = only(RunData(series=series(lr=(STEPS, lr))), "lr_jump")
    assert found.marks == (300,) and "5×" in found.message
