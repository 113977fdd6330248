"""Loss rebound after a resume: the loss jumps above its pre-resume level and/or the LR restarts.

At each resume boundary the loss just after it is compared with the loss just
before it (from this run, or from the run it continues when the tracker found
that one), in units of the curve's noise; the LR the same way. The checkpoint
it resumed from says why, when the checkpoint manager has inspected it.
Article: "续训后loss反弹 → optimizer or scheduler state not restored; save and
load optimizer, scheduler and RNG state".
"""

from __future__ import annotations

import math

import numpy as np

from core.checkpoints import Checkpoint
from core.diagnostics._stats import finite, median, noise_sigma
from core.diagnostics.boundaries import JUMP, ResumeBoundary, resume_points
from core.diagnostics.finding import WARNING, Finding, RunData

WINDOW = 10  # points before the boundary that set the pre-resume level (few: the loss falls)
AFTER = 5  # points after it that show the rebound
NOISE_UNITS = 3.0
MIN_JUMP = 0.02  # a rebound is at least 2 % of the loss


def resume_rebound(run: RunData) -> list[Finding]:
    return [f for point in resume_points(run) if (f := _check(run, point)) is not None]


def _check(run: RunData, point: ResumeBoundary) -> Finding | None:
    loss = _rebound(run, point.step)
    lr = _lr_restart(run, point.step)
    if not loss and not lr:
        return None
    checkpoint = _resumed_from(run, point)
    evidence = {"resume_step": point.step, "detected_by": point.how, **loss, **lr}
    if checkpoint is not None:
        evidence.update(checkpoint=checkpoint.path, checkpoint_step=checkpoint.step,
                        has_optimizer=checkpoint.has.get("optimizer"),
                        has_scheduler=checkpoint.has.get("scheduler"))
    return Finding(
        "resume_rebound", WARNING, _message(point, loss, lr), _cause(loss, lr, checkpoint),
        "Save optimizer, scheduler and RNG state with every checkpoint, and resume from a "
        "complete one (HF: keep optimizer.pt and scheduler.pt; Lightning: a full .ckpt, not "
        "weights only).",
        point.step, loss.get("rebound_until", point.step), "loss" if loss else "lr",
        (point.step,), evidence,
    )


def _segments(run: RunData, name: str, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values before the boundary (from the run this one continues, when it starts there),
    and the steps and values from the boundary on."""
    empty = np.empty(0)
    series = run.get(name)
    if series is None:
        return empty, empty, empty
    steps, values = finite(series)
    before = values[steps < step]
    earlier = run.previous.get(name) if run.previous is not None else None
    if not len(before) and earlier is not None:
        prev_steps, prev_values = finite(earlier)
        before = prev_values[prev_steps < step]
    return before, steps[steps >= step], values[steps >= step]


def _rebound(run: RunData, step: int) -> dict:
    before, after_steps, after = _segments(run, "loss", step)
    if len(before) < 3 or not len(after):
        return {}
    recent = before[-WINDOW:]
    level = median(recent)
    shown = after[:AFTER]
    threshold = max(NOISE_UNITS * 1.2533 * noise_sigma(recent) / math.sqrt(len(shown)),
                    MIN_JUMP * abs(level))
    jump = median(shown) - level
    if jump <= threshold:
        return {}
    peak = int(np.argmax(shown))
    back = peak + np.flatnonzero(after[peak:] <= level + threshold)
    return {"loss_before": level, "loss_after": median(shown),
            "loss_peak_after": float(shown.max()), "rebound": jump / abs(level) if level else None,
            "rebound_until": int(after_steps[back[0]] if len(back) else after_steps[-1])}


def _lr_restart(run: RunData, step: int) -> dict:
    """The LR jumped back up at the boundary, or dropped there and climbed again (a new warm-up)."""
    before, _, after = _segments(run, "lr", step)
    if not len(before) or not len(after) or before[-1] <= 0:
        return {}
    out = {"lr_before": float(before[-1]), "lr_after": float(after[0])}
    if after[0] >= JUMP * before[-1]:
        return out
    climb = after[: AFTER + 1]
    dropped = after[0] * JUMP <= before[-1]
    if dropped and len(climb) > 2 and climb[-1] >= JUMP * max(climb[0], 1e-30):
        return {**out, "lr_rewarmup": True}
    return {}


def _resumed_from(run: RunData, point: ResumeBoundary) -> Checkpoint | None:
    """The checkpoint the log names, else the latest one saved before the boundary."""
    known = list(run.checkpoints) + (list(run.previous.checkpoints) if run.previous else [])
    if point.checkpoint:  # the same path, or the same folder name (written on another machine)
        name = "/" + point.checkpoint.rstrip("/").rsplit("/", 1)[-1]
        named = [c for c in known if c.path == point.checkpoint or c.path.endswith(name)]
        if named:
            return named[0]
    before = [c for c in known if c.step is not None and c.step < point.step]
    return max(before, key=lambda c: c.step) if before else None


def _message(point: ResumeBoundary, loss: dict, lr: dict) -> str:
    parts = []
    if loss:
        parts.append(f"the loss jumped from {loss['loss_before']:.4g} to {loss['loss_after']:.4g}")
    if lr.get("lr_rewarmup"):
        parts.append(f"the LR warm-up started over (from {lr['lr_before']:.3g} down to "
                     f"{lr['lr_after']:.3g})")
    elif lr:
        parts.append(f"the LR restarted from {lr['lr_before']:.3g} to {lr['lr_after']:.3g}")
    return f"After the resume at step {point.step}, " + " and ".join(parts)


def _cause(loss: dict, lr: dict, checkpoint: Checkpoint | None) -> str:
    missing = []
    if checkpoint is not None and checkpoint.has.get("optimizer") is False:
        missing.append("optimizer state (Adam's moments restart from zero)")
    if checkpoint is not None and checkpoint.has.get("scheduler") is False:
        missing.append("scheduler state (the LR schedule starts over)")
    if missing:
        return f"The checkpoint {checkpoint.path} has no " + " and no ".join(missing) + "."
    if lr and loss:
        return "Optimizer and scheduler state were not restored: the LR schedule started over."
    if lr:
        return "The scheduler state was not restored: the LR schedule started over."
    return ("The optimizer state was not restored (Adam's moments restart), or the data order "
            "changed.")
