"""The loss curve's overall course: flat from the start, flat late in the run, or rising.

The curve is reduced to medians of consecutive points (so per-batch noise
and one-off spikes do not count), and "flat" or "rising" is decided with a
Mann-Kendall trend test plus a change larger than the noise of those medians.
Article: "Loss恒高不降 → LR too low, noisy data or labels; raise the LR, check
the labels, or take a bigger base model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.diagnostics._stats import binned_medians, finite, mann_kendall, median, noise_sigma, value_at
from core.diagnostics.boundaries import resume_points
from core.diagnostics.finding import INFO, WARNING, Finding, RunData
from core.diagnostics.nan import first_bad_step

BINS = 40  # the curve is judged on at most this many medians ...
PER_BIN = 3  # ... each of at least this many points
MIN_POINTS = 12  # fewer logged losses say nothing about a trend
TOO_NOISY = 0.2  # medians noisier than 20 % of the loss cannot tell a trend
GUESSING = 1.1  # a token loss 10 % above ln(vocab) is worse than guessing uniformly
MIN_CHANGE = 0.01  # a change below 1 % of the loss is no change
NOISE_UNITS = 3.0  # ... and so is one within 3 noise units of the medians
TREND_Z = 2.5  # Mann-Kendall z that makes a trend real
LATE_SHARE = 0.3  # a late plateau spans at least the last 30 % of the run's steps
FALLING = -1.0  # ... over which the Mann-Kendall z stays above this (no hint of a fall)
LR_ACTIVE = 0.3  # ... while the LR was still at least 30 % of its peak

LOW_LR_CAUSE = "Learning rate too low, noisy data or labels, or a model too small for the task."
LOW_LR_REMEDY = ("Raise the learning rate (or shorten a long warm-up), check the labels and "
                 "data quality, or move to a larger base model.")


@dataclass(frozen=True)
class Curve:
    """A loss curve reduced to bin medians, with the noise of one median."""

    steps: np.ndarray  # first step of each bin
    level: np.ndarray  # median of each bin
    tolerance: float  # a difference of medians smaller than this is noise

    def change(self, a: int, b: int) -> float:
        return float(self.level[b] - self.level[a])


def reduce(steps: np.ndarray, values: np.ndarray) -> Curve:
    bins = min(len(values), BINS, max(6, len(values) // PER_BIN))
    per_bin = len(values) / bins
    starts = np.array([part[0] for part in np.array_split(steps, bins)])
    level = binned_medians(values, bins)
    noise = NOISE_UNITS * 1.2533 * noise_sigma(values) / math.sqrt(per_bin)
    return Curve(starts, level, max(noise, MIN_CHANGE * median(np.abs(level))))


def loss_trend(run: RunData) -> list[Finding]:
    loss = run.get("loss")
    if loss is None:
        return []
    steps, values = _before_nan(run)
    if len(values) < MIN_POINTS:
        return []
    diverged = _worse_than_guessing(steps, values, run)
    if diverged is not None:
        return [diverged]
    curve = reduce(steps, values)
    if curve.tolerance > TOO_NOISY * median(np.abs(curve.level)):
        return []
    for check in (_rising, _flat_from_start, _late_plateau):
        found = check(curve, run, int(steps[-1]))
        if found is not None:
            return [found]
    return []


def _before_nan(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """The finite points before the run first went NaN/Inf (the NaN rule covers what follows)."""
    steps, values = finite(run.get("loss"))
    bad = first_bad_step(run)
    if bad is not None:
        keep = steps < bad
        steps, values = steps[keep], values[keep]
    return steps, values


def _rising(curve: Curve, run: RunData, last_step: int) -> Finding | None:
    """The loss ended above its best level: above where it started, or climbing for long."""
    best = int(np.argmin(curve.level))
    end = len(curve.level) - 1
    rise = curve.change(best, end)
    if best == end or rise <= curve.tolerance:
        return None
    above_start = curve.change(0, end) > curve.tolerance
    long = (end - best) >= 0.25 * len(curve.level)
    climbing = long and mann_kendall(curve.level[best:]) >= TREND_Z
    if not (above_start or climbing):
        return None
    start, final, low = curve.level[0], curve.level[end], curve.level[best]
    if above_start:
        message = f"Loss ended higher than it started ({start:.4g} → {final:.4g})"
    else:
        message = (f"Loss rose from {low:.4g} at step {int(curve.steps[best])} to {final:.4g} "
                   f"by the end ({100 * rise / abs(low):.1f} % worse)")
    best_step = int(curve.steps[best])
    evidence = {"first_level": float(start), "best_level": float(low), "best_step": best_step,
                "final_level": float(final), "lr_at_best": value_at(run.get("lr"), best_step)}
    resumed = [r for r in resume_points(run) if r.step <= best_step]
    if resumed:
        evidence.update(resumed_at=resumed[-1].step, resume_seen_by=resumed[-1].how)
    first = int(curve.steps[0]) if above_start else best_step
    return _rising_finding(message, first, last_step, evidence)


def _worse_than_guessing(steps: np.ndarray, values: np.ndarray, run: RunData) -> Finding | None:
    """A language model whose loss ends above ln(vocab) predicts worse than uniform guessing.

    This catches a loss that blew up before its first logged point, where
    "above the start" cannot show it.
    """
    vocab = run.shape.vocab
    if not vocab or vocab < 2:
        return None
    final = median(values[-max(3, len(values) // 10):])
    uniform = math.log(vocab)
    if final <= GUESSING * uniform:
        return None
    peak = int(np.argmax(values))
    evidence = {"final_level": final, "uniform_guess_loss": uniform, "vocab": vocab,
                "peak_level": float(values[peak]), "peak_step": int(steps[peak])}
    message = (f"Loss ended at {final:.4g}, above ln(vocab) = {uniform:.3g}, the loss of uniform "
               f"guessing (it peaked at {values[peak]:.4g} at step {int(steps[peak])})")
    return _rising_finding(message, int(steps[0]), int(steps[-1]), evidence)


def _rising_finding(message: str, first: int, last: int, evidence: dict) -> Finding:
    cause = ("Training is diverging: a learning rate too high for this phase (or one that "
             "restarted, as after a resume without scheduler state), or bad data late in the run.")
    if "resumed_at" in evidence:
        cause += (f" This run resumed at step {evidence['resumed_at']}: check that the optimizer "
                  "and LR scheduler state were restored and the schedule's length kept.")
    return Finding(
        "loss_rising", WARNING, message, cause,
        "Lower the learning rate or restore its schedule; keep the checkpoint from before the "
        "rise; check the data seen during the rise.",
        first, last, "loss", (), evidence,
    )


def _flat_from_start(curve: Curve, run: RunData, last_step: int) -> Finding | None:
    gain = -min(curve.change(0, i) for i in range(1, len(curve.level)))
    if gain > curve.tolerance or mann_kendall(curve.level) <= -TREND_Z:
        return None
    level = median(curve.level)
    evidence = {"level": level, "best_gain": float(max(gain, 0.0)), "noise": curve.tolerance,
                "lr": value_at(run.get("lr"), last_step)}
    return Finding(
        "loss_plateau", WARNING,
        f"Loss never improved beyond noise: it stayed at about {level:.4g} from start to end",
        LOW_LR_CAUSE, LOW_LR_REMEDY, int(curve.steps[0]), last_step, "loss", (), evidence,
    )


def _late_plateau(curve: Curve, run: RunData, last_step: int) -> Finding | None:
    """No progress over the last part of the run although the LR was still high."""
    lr = run.get("lr")
    if lr is None:
        return None  # a flat end under a decayed LR is just the schedule finishing
    span = last_step - int(curve.steps[0])
    first = int(np.searchsorted(curve.steps, last_step - LATE_SHARE * span))
    tail = curve.level[first:]
    fell = curve.change(first, len(curve.level) - 1) < -curve.tolerance
    if len(tail) < 4 or fell or mann_kendall(tail) <= FALLING:
        return None
    level = median(tail)
    since = int(curve.steps[_plateau_start(curve, first, level)])
    lr_steps, lr_values = finite(lr)
    lr_tail = lr_values[lr_steps >= since]
    if not len(lr_tail) or median(lr_tail) < LR_ACTIVE * lr_values.max():
        return None
    evidence = {"since_step": since, "level": level, "lr": median(lr_tail),
                "lr_peak": float(lr_values.max()),
                "share_of_run": round((last_step - since) / span, 2)}
    return Finding(
        "loss_plateau_late", INFO,
        f"Loss stopped improving after step {since}: the last {last_step - since} steps stayed at "
        f"about {level:.4g} while the LR was still {evidence['lr']:.3g}",
        LOW_LR_CAUSE + " Or the model has learned what this data can teach.",
        LOW_LR_REMEDY + " If the eval metrics are fine, stop earlier to save compute.",
        since, last_step, "loss", (), evidence,
    )


def _plateau_start(curve: Curve, first: int, level: float) -> int:
    """The bin where the loss came within noise of its final level and stopped trending down."""
    while (first > 0 and curve.level[first - 1] <= level + curve.tolerance
           and mann_kendall(curve.level[first - 1 :]) > FALLING):
        first -= 1
    return first
