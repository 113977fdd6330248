"""Evaluation loss rising while the training loss keeps falling: overfitting.

Eval losses are few and smooth (one fixed set), so the rule is simple and
strict: after its best point the eval loss stays above it for at least two
evaluations and ends at least 5 % worse, while the training loss went on
falling. The finding names the best evaluation and the checkpoint to keep.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from core.checkpoints import Checkpoint
from core.diagnostics._stats import finite, median
from core.diagnostics.finding import WARNING, Finding, RunData

MIN_EVALS = 3
MIN_AFTER = 2  # evaluations after the best, all worse than it
MIN_RISE = 0.05  # the last eval this much (relative) above the best


def overfitting(run: RunData) -> list[Finding]:
    diverging = [f for name in _eval_losses(run) if (f := _diverging(run, name)) is not None]
    if not diverging:
        return []
    # One finding per run: the eval set that turned first, the others as evidence.
    first = min(diverging, key=lambda f: f.step_start)
    others = [f.metric for f in diverging if f is not first]
    if others:
        first = replace(first, evidence={**first.evidence, "also_diverging": others})
    return [first]


def _eval_losses(run: RunData) -> list[str]:
    return sorted(n for n in run.series
                  if n == "eval_loss" or (n.startswith("eval/") and n.endswith("loss")))


def _diverging(run: RunData, name: str) -> Finding | None:
    steps, values = finite(run.series[name])
    if len(values) < MIN_EVALS:
        return None
    best = int(np.argmin(values))
    after = values[best + 1 :]
    if len(after) < MIN_AFTER or not (after > values[best]).all():
        return None
    rise = (values[-1] - values[best]) / abs(values[best])
    best_step = int(steps[best])
    train = _train_change(run, best_step, int(steps[-1]))
    if rise < MIN_RISE or train is None or train[1] >= train[0]:
        return None  # training that got worse too is divergence, not overfitting
    checkpoint = _best_checkpoint(run.checkpoints, best_step)
    evidence = {
        "best_step": best_step, "best_eval": float(values[best]), "last_eval": float(values[-1]),
        "rise": float(rise), "train_at_best": train[0], "train_at_end": train[1],
        "best_checkpoint": checkpoint.path if checkpoint else None,
        "best_checkpoint_step": checkpoint.step if checkpoint else None,
    }
    label = "Eval loss" if name == "eval_loss" else name
    message = (f"{label} rose from {values[best]:.4g} at step {best_step} to {values[-1]:.4g} "
               f"({100 * rise:.0f} % worse) while the training loss fell from {train[0]:.4g} "
               f"to {train[1]:.4g}")
    return Finding(
        "overfitting", WARNING, message,
        "The model is memorising the training data (too many epochs, or too little or "
        "duplicated data).",
        _remedy(best_step, checkpoint), best_step, int(steps[-1]), name, (best_step,), evidence,
    )


def _train_change(run: RunData, start: int, end: int) -> tuple[float, float] | None:
    """Median training loss around ``start`` and near ``end`` (None without a training loss)."""
    loss = run.get("loss")
    if loss is None:
        return None
    steps, values = finite(loss)
    near_start = values[(steps <= start)][-5:]
    near_end = values[(steps > start) & (steps <= end)][-5:]
    if not len(near_start) or not len(near_end):
        return None
    return median(near_start), median(near_end)


def _best_checkpoint(checkpoints: list[Checkpoint], step: int) -> Checkpoint | None:
    """The checkpoint saved at the best evaluation, or the latest one before it."""
    before = [c for c in checkpoints if c.step is not None and c.step <= step]
    return max(before, key=lambda c: c.step) if before else None


def _remedy(step: int, checkpoint: Checkpoint | None) -> str:
    keep = (f"Keep {checkpoint.path} (step {checkpoint.step})" if checkpoint
            else f"Keep the checkpoint saved at or just before step {step}")
    return (f"{keep}: it is the best model of this run. Stop earlier (early stopping), train "
            "fewer epochs, add or deduplicate data, or regularise more (dropout, weight decay).")
