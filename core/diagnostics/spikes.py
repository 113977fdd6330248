"""Loss spikes and gradient-norm explosions, measured against the curve's own recent noise.

A point is compared with the median of the points just before it, in units of
the curve's point-to-point noise (a rolling median absolute deviation), so the
same rule works on a smooth averaged curve and on a noisy per-step one. One
hard batch that is gone at the next point is data, not instability: a spike
must last two logged points or be extreme. The article's reading: "Loss突跳 →
LR too high or batch size changed abruptly; lower the LR and scale it with the
batch".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.diagnostics._stats import finite, median, step_interval, trailing_deviations, value_at
from core.diagnostics.causes import Cause, choose, considered, remedy
from core.diagnostics.finding import WARNING, Finding, RunData
from core.diagnostics.resume import resume_rebound

LEVEL_WINDOW = 10  # a point is compared with the median of the points just before it
NOISE_WINDOW = 50  # ... in units of the point-to-point noise of this many points
MIN_HISTORY = 10  # no verdict before this many points
Z_ENTER = 4.0  # a point this many noise units above the median is part of a spike
Z_PEAK = 8.0  # a spike of two or more points must peak this high
Z_SINGLE = 20.0  # a one-point spike must peak this high
MIN_RISE = 0.2  # and the peak must be at least 20 % above the median
MAX_SPIKES = 5  # the largest spikes become findings; the evidence counts the rest
GRAD_FACTOR = 10.0  # a gradient norm this many times its recent median has exploded
LR_FOLLOWS = (0.5, 2.0)  # LR change / batch change within this band: the LR followed
LR_RISEN = 2.0  # the LR just before a spike, this many times its usual value: it is the cause
LR_STEADY = 1.25  # below this many times its usual value the LR did not rise: not the cause
KEEP_CLIPPING = "Keep gradient clipping on."
LOWER_LR = "Lower the learning rate or lengthen the warm-up."
SCALE_LR = ("When you change the batch size, scale the LR with it (twice the batch, twice "
            "the LR).")
BF16 = "Train in bf16 where the GPU has it (no loss scale to overflow)."
CHECK_DATA = ("Look at the batches around those steps for corrupt or extreme samples, and skip "
              "or fix them.")


@dataclass(frozen=True)
class Spike:
    start: int  # index of the first point above the median
    end: int  # index of the last
    peak: int  # index of the highest point
    z: float  # the highest robust z-score in the spike
    baseline: float  # the median just before it began


def find_spikes(values: np.ndarray, *, log_scale: bool = False) -> list[Spike]:
    """Runs of consecutive points far above their trailing median that pass the size rules."""
    if not len(values):  # a curve whose every point was NaN: nothing to compare
        return []
    data = np.log10(values) if log_scale else values
    # Only the points above Z_ENTER are kept from each chunk: every point of a spike is one.
    above, z, median = [], [], []
    for start, dev in trailing_deviations(data, LEVEL_WINDOW, NOISE_WINDOW, MIN_HISTORY):
        found = np.flatnonzero(dev.z > Z_ENTER)
        above.append(found + start)
        z.append(dev.z[found])
        median.append(dev.median[found])
    index, z, median = (np.concatenate(parts) for parts in (above, z, median))
    spikes = []
    for first, last in _runs(index):
        start, end = index[first], index[last]
        # The median adapts as a long spike goes on: judge it against the level before it began.
        peak = start + int(np.argmax(data[start : end + 1]))
        spike = Spike(start, end, peak, float(np.max(z[first : last + 1])), float(median[first]))
        if _large_enough(spike, values, log_scale):
            spikes.append(spike)
    return spikes


def _runs(index: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) positions in ``index`` of each run of consecutive indices."""
    if not len(index):
        return []
    breaks = np.flatnonzero(np.diff(index) != 1)
    return list(zip(np.concatenate([[0], breaks + 1]), np.append(breaks, len(index) - 1),
                    strict=True))


def _large_enough(spike: Spike, values: np.ndarray, log_scale: bool) -> bool:
    if log_scale:  # a gradient norm orders of magnitude up is an explosion even for one point
        return spike.z >= Z_PEAK and values[spike.peak] >= GRAD_FACTOR * 10**spike.baseline
    if spike.z < (Z_PEAK if spike.end > spike.start else Z_SINGLE):
        return False
    return spike.baseline <= 0 or values[spike.peak] >= (1 + MIN_RISE) * spike.baseline


def loss_spikes(run: RunData) -> list[Finding]:
    loss = run.get("loss")
    if loss is None:
        return []
    steps, values = finite(loss)
    # A jump right after a resume is the resume rule's to report.
    rebounds = [(f.step_start, f.step_end) for f in resume_rebound(run) if f.metric == "loss"]
    spikes = [s for s in find_spikes(values)
              if not any(a <= steps[s.start] <= b for a, b in rebounds)]
    largest = sorted(sorted(spikes, key=lambda s: -s.z)[:MAX_SPIKES], key=lambda s: s.start)
    return [_spike_finding(run, steps, values, s, len(spikes)) for s in largest]


def _spike_finding(run: RunData, steps, values, spike: Spike, total: int) -> Finding:
    peak_step = int(steps[spike.peak])
    window_start = int(steps[max(0, spike.start - LEVEL_WINDOW)])
    lr = _lr_context(run, window_start, peak_step)
    batch = _batch_change(run, window_start, peak_step)
    causes = _spike_causes(lr, batch)
    evidence = {
        "peak_step": peak_step, "peak_loss": float(values[spike.peak]),
        "median_before": spike.baseline, "noise_units": round(spike.z, 1),
        "points": int(spike.end - spike.start + 1), "spikes_in_run": total,
        "recovered": bool(spike.end < len(values) - 1), **lr, **batch,
        "causes_considered": considered(causes),
    }
    message = (
        f"Loss spiked to {values[spike.peak]:.4g} at step {peak_step}, "
        f"from a median of {spike.baseline:.4g} ({spike.z:.0f}× the usual noise)"
    )
    return Finding(
        "loss_spike", WARNING, message, choose(causes), remedy(causes, KEEP_CLIPPING),
        int(steps[spike.start]), int(steps[spike.end]), "loss", (peak_step,), evidence,
    )


def _lr_context(run: RunData, since: int, step: int) -> dict:
    """The LR at the spike, and the highest LR just before it against the usual one."""
    lr = run.get("lr")
    if lr is None or value_at(lr, step) is None:
        return {}
    steps, values = finite(lr)
    recent = values[(steps >= since) & (steps <= step)]
    usual = values[steps < since][-NOISE_WINDOW:]
    out = {"lr": value_at(lr, step)}
    if len(recent) and len(usual) and median(usual) > 0:
        out["lr_recent_max"] = float(recent.max())
        out["lr_ratio_to_usual"] = float(recent.max() / median(usual))
    return out


def _batch_change(run: RunData, since: int, step: int) -> dict:
    """The batch size at the spike and, when it changed shortly before, whether the LR followed."""
    batch = run.get("batch_size") or run.get("micro_batch_size")
    now, before = value_at(batch, step), value_at(batch, since)
    if now is None:
        return {}
    out: dict = {"batch_size": now}
    if before and now != before:
        lr = run.get("lr")
        lr_now, lr_before = value_at(lr, step), value_at(lr, since)
        out["batch_size_before"] = before
        if lr_now and lr_before:
            follow = (lr_now / lr_before) / (now / before)
            out["lr_followed_batch"] = bool(LR_FOLLOWS[0] <= follow <= LR_FOLLOWS[1])
    return out


def _spike_causes(lr: dict, batch: dict) -> list[Cause]:
    """A batch change the LR did not follow, an LR that had just risen, or a bad batch."""
    batch_cause = _batch_cause(batch)
    lr_cause = _lr_cause(lr)
    flat = batch_cause.verdict is False and lr_cause.verdict is False
    data = Cause("a bad batch or data outlier",
                 "LR and batch unchanged: likely a bad batch or data outlier.",
                 True if flat else None, remedy=CHECK_DATA)
    return [lr_cause, batch_cause, data]


def _batch_cause(batch: dict) -> Cause:
    """A batch-size change is the cause unless the LR was scaled with it (the article's rule)."""
    changed = "batch_size_before" in batch
    followed = batch.get("lr_followed_batch")
    verdict = None if "batch_size" not in batch else changed and followed is not True
    text = (f"The batch size changed from {batch.get('batch_size_before', 0):g} to "
            f"{batch.get('batch_size', 0):g} shortly before"
            + (", but the learning rate did not follow." if followed is False else "."))
    return Cause("a batch-size change", text, verdict, _batch_words(batch), SCALE_LR)


def _lr_cause(lr: dict) -> Cause:
    ratio = lr.get("lr_ratio_to_usual")
    verdict = None if ratio is None else (True if ratio >= LR_RISEN else
                                          False if ratio < LR_STEADY else None)
    text = (f"The learning rate had just risen to {lr.get('lr_recent_max', 0):.3g}, "
            f"{ratio or 0:.3g}× its usual value: too high for this phase.")
    why = f"LR {ratio:.2g}× its usual value" if ratio is not None else "no LR history"
    return Cause("a learning rate too high", text, verdict, why, LOWER_LR)


def _batch_words(batch: dict) -> str:
    if "batch_size" not in batch:
        return "no batch size logged"
    if "batch_size_before" not in batch:
        return f"batch constant at {batch['batch_size']:g}"
    followed = "followed" if batch.get("lr_followed_batch") else "did not follow"
    return (f"batch {batch['batch_size_before']:g} → {batch['batch_size']:g}, "
            f"the LR {followed}")


def grad_norm_explosion(run: RunData) -> list[Finding]:
    series = run.get("grad_norm")
    if series is None:
        return []
    steps, values = finite(series)
    keep = values > 0
    steps, values = steps[keep], values[keep]
    spikes = find_spikes(values, log_scale=True)
    return [_explosion_finding(run, steps, values, spikes)] if spikes else []


def _explosion_finding(run: RunData, steps, values, spikes: list[Spike]) -> Finding:
    biggest = max(spikes, key=lambda s: values[s.peak] / 10**s.baseline)
    factor = values[biggest.peak] / 10**biggest.baseline
    peak_step = int(steps[biggest.peak])
    followed = _loss_followed(run, [int(steps[s.peak]) for s in spikes])
    message = (f"Gradient norm exploded to {values[biggest.peak]:.4g} at step {peak_step}, "
               f"{factor:.0f}× its recent median")
    if len(spikes) > 1:
        message += f" ({len(spikes)} explosions in the run)"
    if not followed:
        message += "; the loss did not follow"
    evidence = {"peak_step": peak_step, "peak_grad_norm": float(values[biggest.peak]),
                "median_before": float(10**biggest.baseline), "factor": float(factor),
                "explosions": len(spikes), "loss_followed": followed,
                "lr": value_at(run.get("lr"), peak_step)}
    since = int(steps[max(0, spikes[0].start - LEVEL_WINDOW)])
    causes = _explosion_causes(run, since, peak_step, followed)
    evidence["causes_considered"] = considered(causes)
    return Finding(
        "grad_explosion", WARNING, message, choose(causes),
        remedy(causes, "Clip gradients (max_grad_norm 1.0)."),
        int(steps[spikes[0].start]), int(steps[spikes[-1].end]), "grad_norm",
        tuple(int(steps[s.peak]) for s in spikes), evidence,
    )


def _explosion_causes(run: RunData, since: int, step: int, followed: bool) -> list[Cause]:
    """An LR that had just risen, an fp16 overflow, or batches of extreme data."""
    lr_cause = _lr_cause(_lr_context(run, since, step))
    overflow = _overflow_cause(run, since, step)
    clean = lr_cause.verdict is False and overflow.verdict is False
    text = ("Some batches produce enormous gradients (extreme or corrupt samples, an unstable "
            "MoE router or attention logits)"
            + (": clipping kept the loss in check so far." if not followed else "."))
    data = Cause("a batch of extreme data", text, True if clean else None, remedy=CHECK_DATA)
    return [lr_cause, overflow, data]


def _overflow_cause(run: RunData, since: int, step: int) -> Cause:
    """fp16 overflow shows as the loss scale halving; bf16 and fp32 have no loss scale."""
    text = "The fp16 loss scale fell around it: gradients overflowed in half precision."
    scale = run.get("loss_scale")
    if scale is not None:
        before, lowest = value_at(scale, since), _lowest(scale, since, step)
        if before is not None and lowest is not None:
            dropped = lowest < before
            why = f"loss scale {before:g} → {lowest:g}" if dropped else f"loss scale {before:g}"
            return Cause("an fp16 overflow", text, dropped, why, BF16)
    precision = (run.shape.precision or "").lower()
    if precision and "fp16" not in precision:
        return Cause("an fp16 overflow", text, False, f"precision {precision}", BF16)
    return Cause("an fp16 overflow", text, None, "no loss scale logged", BF16)


def _lowest(series, since: int, step: int) -> float | None:
    steps, values = finite(series)
    inside = values[(steps >= since) & (steps <= step)]
    return float(inside.min()) if len(inside) else None


def _loss_followed(run: RunData, steps: list[int]) -> bool:
    """Whether the loss spiked (or went NaN: then the NaN rule speaks) around any of those steps."""
    loss = run.get("loss")
    if loss is None or not np.isfinite(loss.values).all():
        return True
    loss_steps, values = finite(loss)
    reach = 2 * step_interval(loss_steps)
    spans = [(loss_steps[s.start] - reach, loss_steps[s.end] + reach)
             for s in find_spikes(values)]
    return any(a <= step <= b for step in steps for a, b in spans)
