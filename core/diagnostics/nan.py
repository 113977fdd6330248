"""Loss or gradients that became NaN/Inf, and fp16 loss-scale collapse.

The first bad step comes from whichever says it first: a non-finite loss,
gradient norm or eval loss, a rising ``nan_iters`` counter, or a "nan" event
from a console log. The HF Trainer hides NaN losses by default
(``logging_nan_inf_filter``): its log then shows a loss of exactly 0 while the
gradient norm is NaN, so that pattern counts too. Article: "Loss变NaN → data
with NaN or LR too high; filter the data, lower the LR, check numeric stability".
"""

from __future__ import annotations

import numpy as np

from core.diagnostics._stats import finite, median, value_at
from core.diagnostics.finding import CRITICAL, INFO, WARNING, Finding, RunData
from core.runlog import RunEvent, Series

COLLAPSE = 2.0**10  # a loss scale this many times below its usual level has collapsed
SKIPPED_SHARE = 0.02  # up to 2 % of logged steps skipped as fp16 overflows is the scaler at work
RISING = 1.05  # an LR 5 % above its value a few points earlier is still warming up
LOOKBACK = 5  # points before the bad step that show the trend leading to it
LABELS = {"loss": "Loss", "grad_norm": "Gradient norm", "eval_loss": "Eval loss"}
WATCHED = tuple(LABELS)  # in this order when they go bad at the same step
MEMORY = ("mem_peak_gib", "mem_reserved_gib", "mem_used_gib")


def first_bad_step(run: RunData) -> int | None:
    """The step where the run first went NaN/Inf, by any evidence (None: it never did)."""
    first = _first_bad(run)
    return None if first is None else first[0]


def nan_loss(run: RunData) -> list[Finding]:
    first = _first_bad(run)
    if first is None:
        return []
    step, source = first
    evidence = {"first_step": step, "seen_in": source, **_extent(run, step),
                **_lr_at(run, step), **_scale_near(run, step)}
    if _skipped_overflows(run, evidence):  # the scale where the skipping stopped
        evidence.update(_scale_near(run, evidence["last_bad_step"]))
        return [_overflow_finding(step, evidence)]
    metric = "loss" if run.get("loss") is not None else source
    return [Finding(
        "loss_nan", WARNING if evidence.get("recovered") else CRITICAL,
        _message(step, source, evidence), _cause(evidence),
        "Filter out samples with NaN, empty or extreme values; lower the learning rate by an "
        "order of magnitude (or warm up longer); train in bf16 instead of fp16; look for "
        "divisions by zero in custom loss code.",
        step, evidence.get("last_bad_step", step), metric, () if step is None else (step,),
        evidence,
    )]


def _skipped_overflows(run: RunData, evidence: dict) -> bool:
    """A few NaN/Inf steps in an fp16 run that went on: the loss scaler skipping overflows."""
    fp16 = run.get("loss_scale") is not None or "fp16" in str(run.shape.precision or "")
    loss = run.get("loss")
    share = evidence.get("bad_points", 0) / len(loss) if loss is not None else 1.0
    return fp16 and bool(evidence.get("recovered")) and share <= SKIPPED_SHARE


def _overflow_finding(step: int | None, evidence: dict) -> Finding:
    count = evidence["bad_points"]
    message = (f"{count} logged step{'s' if count > 1 else ''} overflowed fp16 (NaN/Inf) from step "
               f"{step} on and {'were' if count > 1 else 'was'} skipped; training went on")
    if "loss_scale_low" in evidence:
        message += f" (loss scale down to {evidence['loss_scale_low']:g})"
    return Finding(
        "overflow_skips", INFO, message,
        "fp16 dynamic loss scaling: a step whose gradients overflow is skipped and the scale "
        "halved. A few such steps are normal.",
        "Nothing to do while they stay rare; if they become frequent, train in bf16 or lower "
        "the learning rate.",
        step, evidence.get("last_bad_step", step), "loss", () if step is None else (step,),
        evidence,
    )


def _first_bad(run: RunData) -> tuple[int | None, str] | None:
    """The earliest step where something turned NaN/Inf, and what showed it."""
    found: list[tuple[int, str]] = []
    holes = _holes(run)
    for name in WATCHED:
        series = run.get(name)
        if series is not None:
            bad = ~np.isfinite(series.values) & ~np.isin(series.steps, holes)
            if bad.any():
                found.append((int(series.steps[np.flatnonzero(bad)[0]]), name))
    counter = run.get("nan_iters")
    if counter is not None and np.nanmax(counter.values) > 0:
        found.append((int(counter.steps[np.flatnonzero(counter.values > 0)[0]]), "nan_iters"))
    events = run.events_of("nan")
    found += [(step, "event") for e in events if (step := _event_step(e)) is not None]
    if found:
        return min(found, key=lambda f: f[0])  # a tie keeps the order of WATCHED
    return (None, "event") if events else None


def _event_step(event: RunEvent) -> int | None:
    """The event's step, or the iteration its message names."""
    if event.step is not None:
        return int(event.step)
    iteration = event.data.get("iteration")
    return int(iteration) if isinstance(iteration, int | float) else None


def _holes(run: RunData) -> np.ndarray:
    """Steps where even a memory counter is NaN: the log has no data there (a placeholder,
    as in Megatron's golden-value files), which is not a training NaN."""
    holes = [s.steps[~np.isfinite(s.values)] for n in MEMORY if (s := run.get(n)) is not None]
    return np.concatenate(holes) if holes else np.empty(0, dtype=np.int64)


def _extent(run: RunData, step: int | None) -> dict:
    """How many logged steps went bad, whether training went on after, and the loss before."""
    loss = run.get("loss")
    if loss is None or step is None:
        return {}
    hidden = _hidden_nan(loss, run.get("grad_norm"))
    holes = _holes(run)
    bad = set(loss.steps[(~np.isfinite(loss.values) & ~np.isin(loss.steps, holes)) | hidden])
    grad = run.get("grad_norm")
    if grad is not None:
        bad |= set(grad.steps[~np.isfinite(grad.values) & ~np.isin(grad.steps, holes)])
    last_bad = int(max((b for b in bad if b >= step), default=step))
    good = np.isfinite(loss.values) & ~hidden
    out = {"bad_points": sum(b >= step for b in bad), "last_bad_step": last_bad,
           "recovered": bool((loss.steps[good] > last_bad).any()),
           "loss_hidden_by_filter": bool(hidden.any())}
    before = loss.values[good & (loss.steps < step)]
    if len(before):
        out["loss_before"] = float(before[-1])
    return out


def _hidden_nan(loss: Series, grad_norm: Series | None) -> np.ndarray:
    """Points where the HF Trainer's NaN filter logged 0.0 while the gradients were NaN.

    The pattern: the loss is exactly 0 from some point to the end, having been
    positive before, and the gradient norm is non-finite from there on.
    """
    none = np.zeros(len(loss), dtype=bool)
    zero = loss.values == 0.0
    if grad_norm is None or not zero.any() or (loss.values[~zero] < 0).any():
        return none
    first = int(np.flatnonzero(zero)[0])
    if not zero[first:].all():
        return none
    later = grad_norm.values[grad_norm.steps >= loss.steps[first]]
    if len(later) == 0 or np.isfinite(later).any():
        return none
    return np.arange(len(loss)) >= first


def _lr_at(run: RunData, step: int) -> dict:
    lr = run.get("lr")
    now = value_at(lr, step)
    if now is None:
        return {}
    steps, values = finite(lr)
    earlier = values[steps < step][-LOOKBACK:]
    out = {"lr": now, "lr_peak": float(values.max())}
    if len(earlier):
        out["lr_rising"] = bool(now > RISING * earlier[0])
    return out


def _scale_near(run: RunData, step: int) -> dict:
    scale = run.get("loss_scale")
    if scale is None:
        return {}
    steps, values = finite(scale)
    upto = values[steps <= step]
    if not len(upto):
        return {}
    usual, low = median(upto), float(upto[-LOOKBACK:].min())
    return {"loss_scale_usual": usual, "loss_scale_low": low,
            "loss_scale_collapsed": bool(low * COLLAPSE <= usual)}


def _message(step: int | None, source: str, ev: dict) -> str:
    where = "(the log reports it without a step)" if step is None else f"at step {step}"
    if source == "grad_norm" and ev.get("loss_hidden_by_filter"):
        text = (f"Gradient norm became NaN {where}; the logged loss shows 0.0 because the NaN "
                "was filtered")
    elif source in WATCHED:
        text = f"{LABELS[source]} became NaN/Inf {where}"
    else:
        text = f"NaN/Inf iterations reported {where}"
    if "recovered" in ev:
        text += ", and training went on" if ev["recovered"] else ", and never recovered"
    return text


def _cause(ev: dict) -> str:
    reasons = []
    if ev.get("loss_scale_collapsed"):
        reasons.append(f"the fp16 loss scale had collapsed from {ev['loss_scale_usual']:g} "
                       f"to {ev['loss_scale_low']:g} (fp16 overflow)")
    if ev.get("lr_rising"):
        reasons.append(f"the learning rate was still rising (warm-up) at {ev['lr']:.3g}")
    elif "lr" in ev and ev["lr"] >= 0.9 * ev["lr_peak"]:
        reasons.append(f"the learning rate was at its peak, {ev['lr']:.3g}")
    if not reasons:
        return "Data with NaN/Inf values, a learning rate too high, or numeric overflow (fp16)."
    return "Likely a learning rate too high or overflow: " + "; ".join(reasons) + "."


def loss_scale_collapse(run: RunData) -> list[Finding]:
    """The dynamic loss scale fell ten halvings or more below its usual level, or the log
    says it hit its floor."""
    if _first_bad(run) is not None:
        return []  # the NaN finding reports a collapse as its cause
    collapse = _series_collapse(run) or _event_collapse(run)
    if collapse is None:
        return []
    step, evidence = collapse
    low, usual = evidence["loss_scale_low"], evidence.get("loss_scale_usual")
    message = f"fp16 loss scale collapsed to {low:g}" + ("" if step is None else f" at step {step}")
    if usual is not None:
        message += f" (usually {usual:g})"
    return [Finding(
        "loss_scale_collapse", WARNING, message,
        "Gradients overflow fp16 again and again: values too large for half precision.",
        "Train in bf16 instead of fp16; lower the learning rate; clip gradients.",
        step, step, "loss_scale", () if step is None else (step,), evidence,
    )]


def _series_collapse(run: RunData) -> tuple[int, dict] | None:
    scale = run.get("loss_scale")
    if scale is None:
        return None
    steps, values = finite(scale)
    if not len(values):
        return None
    usual, low = median(values), int(np.argmin(values))
    if values[low] * COLLAPSE > usual:
        return None
    return int(steps[low]), {"loss_scale_usual": usual, "loss_scale_low": float(values[low])}


def _event_collapse(run: RunData) -> tuple[int | None, dict] | None:
    """A "loss_scale" event: a console log said the scale reached its minimum."""
    events = run.events_of("loss_scale")
    if not events:
        return None
    data = events[0].data
    low = data.get("scale")
    evidence = {"loss_scale_low": float(low) if isinstance(low, int | float) else 1.0,
                "message": events[0].message}
    if isinstance(data.get("from"), int | float):
        evidence["loss_scale_usual"] = float(data["from"])
    return events[0].step, evidence
