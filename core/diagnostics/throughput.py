"""Throughput: a sustained drop within a run, and per-GPU speed lost as GPUs were added.

Within a run the throughput curve is reduced to bin medians (so evaluation
and checkpoint pauses do not count) and compared with the good level the run
itself showed. Across runs, a run is compared with stored runs of the same
shape on fewer GPUs: per-GPU throughput falling well below theirs is the
article's "多卡训练速度反降 → communication beats compute: reduce TP, prefer PP,
check the interconnect".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.diagnostics._stats import binned_medians, finite, median
from core.diagnostics.finding import WARNING, Finding, PeerRun, RunData
from core.runlog import Series
from core.shape import RunShape

# Per-GPU figures first (they compare across GPU counts as they are), then global rates.
PER_GPU = ("tflops", "mfu")
GLOBAL = ("tokens_per_s", "samples_per_s")
STEP_TIME = "step_time_s"  # the last resort within a run: its inverse is a rate
WARMUP = 0.05  # the first 5 % of points (at least 2) are compilation and warm-up
BINS = 40
DROP = 0.25  # a level 25 % below the run's good level is a drop ...
MIN_BINS = 3  # ... when it lasts this many bins
GOOD = 80  # the run's good level: this percentile of its bin medians
EFFICIENCY = 0.7  # per-GPU throughput below 70 % of the fewer-GPU run's: scaling failed
SAME = ("method", "precision", "seq_len", "micro_batch")  # must match when both runs state them


def steady(series: Series) -> np.ndarray:
    """The throughput values after the warm-up."""
    _, values = finite(series)
    skip = max(2, int(WARMUP * len(values)))
    return values[skip:] if len(values) > skip + 3 else values[:0]


def throughput_drop(run: RunData) -> list[Finding]:
    name = next((n for n in GLOBAL + PER_GPU + (STEP_TIME,) if run.get(n) is not None), None)
    if name is None:
        return []
    steps, values = finite(run.series[name])
    if name == STEP_TIME:  # seconds per step: its inverse is the rate
        keep = values > 0
        steps, values = steps[keep], 1.0 / values[keep]
    skip = max(2, int(WARMUP * len(values)))
    drop = _drop(steps[skip:], values[skip:])
    return [] if drop is None else [_drop_finding(run, name, drop)]


@dataclass(frozen=True)
class Drop:
    start: int  # first step of the slow stretch
    end: int  # the step where it ended (the run's last step when it never recovered)
    good: float  # the rate the run showed it can do
    low: float  # the rate during the stretch
    recovered: bool


def _drop(steps: np.ndarray, values: np.ndarray) -> Drop | None:
    """The longest stretch of bin medians well below the run's good level, if long enough."""
    bins = min(BINS, len(values) // 3)
    if bins < 2 * MIN_BINS:
        return None
    level = binned_medians(values, bins)
    starts = np.array([part[0] for part in np.array_split(steps, bins)])
    good = float(np.percentile(level, GOOD))
    span = _longest_run(level < (1 - DROP) * good)
    if span is None or span[1] - span[0] + 1 < MIN_BINS:
        return None
    first, last = span
    recovered = last + 1 < bins
    end = int(starts[last + 1]) if recovered else int(steps[-1])
    return Drop(int(starts[first]), end, good, median(level[first : last + 1]), recovered)


def _drop_finding(run: RunData, name: str, drop: Drop) -> Finding:
    share = 1 - drop.low / drop.good
    evidence = {"metric": name, "good_level": _as_logged(name, drop.good),
                "dropped_level": _as_logged(name, drop.low), "drop": round(share, 3),
                "recovered": drop.recovered, **_memory_during(run, drop.start, drop.end)}
    if name == STEP_TIME:
        what = f"step time rose from about {1 / drop.good:.3g} s to {1 / drop.low:.3g} s"
    else:
        what = f"{name} fell from about {drop.good:.4g} to {drop.low:.4g}"
    until = f" to {drop.end}" if drop.recovered else " to the end"
    return Finding(
        "throughput_drop", WARNING,
        f"Throughput dropped {100 * share:.0f} %: {what} from step {drop.start}{until}",
        "A data loader that cannot keep up, thermal or power throttling, allocator fragmentation "
        "(reserved memory growing), or slow checkpoint or logging I/O.",
        "Add data loader workers and prefetching, watch GPU clocks and temperatures, set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and write checkpoints asynchronously.",
        drop.start, drop.end, name, (), evidence,
    )


def _as_logged(name: str, rate: float) -> float:
    return 1.0 / rate if name == STEP_TIME else rate


def _longest_run(mask: np.ndarray) -> tuple[int, int] | None:
    best, start = None, None
    for i, flag in enumerate(list(mask) + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if best is None or i - start > best[1] - best[0] + 1:
                best = (start, i - 1)
            start = None
    return best


def _memory_during(run: RunData, start: int, end: int) -> dict:
    """Reserved memory before and during the drop: growth points to fragmentation."""
    reserved = run.get("mem_reserved_gib")
    if reserved is None:
        return {}
    steps, values = finite(reserved)
    before, during = values[steps < start], values[(steps >= start) & (steps <= end)]
    if not len(before) or not len(during):
        return {}
    return {"reserved_gib_before": median(before),
            "reserved_gib_during": median(during)}


def comparable(a: RunShape, b: RunShape) -> bool:
    """Same model and setup on a different number of GPUs, as far as both shapes say."""
    if not a.n_gpus or not b.n_gpus or a.n_gpus == b.n_gpus:
        return False
    if not _same_model(a, b):
        return False
    return all(getattr(a, f) is None or getattr(b, f) is None or getattr(a, f) == getattr(b, f)
               for f in SAME)


def _same_model(a: RunShape, b: RunShape) -> bool:
    if a.n_params and b.n_params:
        return abs(a.n_params - b.n_params) <= 0.01 * max(a.n_params, b.n_params)
    if a.n_layers and a.hidden and (a.n_layers, a.hidden) == (b.n_layers, b.hidden):
        return True
    return bool(a.model and a.model == b.model)


def scaling(run: RunData) -> list[Finding]:
    if not run.shape.n_gpus or not run.peers:
        return []
    mine = _per_gpu(run.shape, run.series)
    if mine is None:
        return []
    worst = None
    for peer in run.peers:
        if not comparable(run.shape, peer.shape) or peer.shape.n_gpus >= run.shape.n_gpus:
            continue
        theirs = _per_gpu(peer.shape, peer.series)
        if theirs is None or theirs[0] != mine[0] or theirs[1] <= 0:
            continue
        efficiency = mine[1] / theirs[1]
        if worst is None or efficiency < worst[0]:
            worst = (efficiency, peer, theirs[1])
    if worst is None or worst[0] >= EFFICIENCY:
        return []
    return [_scaling_finding(run, mine, *worst)]


def _per_gpu(shape: RunShape, series: dict[str, Series]) -> tuple[str, float] | None:
    """(metric, steady per-GPU value) of a run."""
    for name in PER_GPU + GLOBAL:
        if name in series and len(values := steady(series[name])):
            per = 1 if name in PER_GPU else shape.n_gpus
            return name, median(values) / per
    return None


def _scaling_finding(run: RunData, mine: tuple[str, float], efficiency: float, peer: PeerRun,
                     theirs: float) -> Finding:
    metric, value = mine
    n, m = run.shape.n_gpus, peer.shape.n_gpus
    evidence = {"metric": metric, "per_gpu": value, "gpus": n, "peer": peer.ref, "peer_gpus": m,
                "peer_per_gpu": theirs, "efficiency": round(efficiency, 3), "total": value * n,
                "peer_total": theirs * m, "tp": run.shape.tp, "pp": run.shape.pp}
    message = (f"On {n} GPUs each GPU does {value:.4g} {metric}, {100 * efficiency:.0f} % of the "
               f"{theirs:.4g} per GPU of {peer.ref} on {m}")
    if value * n < theirs * m:
        message += ": slower in total"
    steps = run.series[metric].steps
    return Finding(
        "scaling", WARNING, message,
        "Communication beats compute: adding GPUs added more synchronisation than work "
        "(tensor parallelism across PCIe or nodes, small per-GPU batches).",
        "Reduce TP (keep it within NVLink), prefer PP or more data parallelism, raise the per-GPU "
        "batch or gradient accumulation, check the interconnect; or train on fewer GPUs.",
        int(steps.min()), int(steps.max()), metric, (), evidence,
    )
