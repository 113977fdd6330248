"""Memory headroom: a peak within 5 % of the GPU's capacity, or below 40 % of it.

The peak is the highest counter the run logged (reserved and driver-reported
memory are what runs out, so they come before allocated). Capacity comes from
the run's shape, else from the GPU catalog by model name. When memory is
spare, the micro batch could grow until the article's 15 % margin is reached:
how far comes from the memory model when the shape states the model, micro
batch and sequence length (the model's prediction, shifted to meet the
measured peak, grown batch by batch), else from a proportional estimate (every
byte scales with the batch, which ignores that weights and optimizer states
do not grow). The finding says which.
"""

from __future__ import annotations

import numpy as np

from core.diagnostics.finding import INFO, WARNING, Finding, RunData
from core.metrics import MARGIN

TIGHT = 0.95  # peak at or above 95 % of capacity: the next change will OOM
SPARE = 0.40  # peak below 40 %: the batch could grow
MIN_GROWTH = 1.5  # smaller growth is not worth a finding
MAX_GROWTH = 64  # the memory model is not asked beyond this many times the batch
# Counters, most telling first: what the allocator holds and what the driver sees run out.
COUNTERS = (("mem_reserved_gib", "reserved"), ("mem_used_gib", "device"),
            ("mem_peak_gib", "allocated"))


def memory_headroom(run: RunData) -> list[Finding]:
    if run.events_of("oom"):
        return []  # the OOM finding says it all
    capacity, capacity_from = _capacity(run)
    peak = _peak(run)
    if capacity is None or peak is None:
        return []
    name, counter, value, step = peak
    share = value / capacity
    evidence = {"peak_gib": value, "counter": counter, "peak_step": step, "capacity_gib": capacity,
                "capacity_from": capacity_from, "share": round(share, 4)}
    text = f"Peak {counter} memory {value:.3g} of {capacity:.3g} GiB ({100 * share:.0f} %)"
    if share >= TIGHT:
        return [Finding(
            "memory_tight", WARNING, text + ": less than 5 % left",
            "The run fills the GPU: a longer batch, an evaluation or a library update will OOM.",
            "Keep a 15-20 % margin: lower the micro batch or sequence length, or turn on "
            "activation recomputation.", step, step, name, (step,), evidence,
        )]
    if share < SPARE:
        return _spare(run, text, evidence, name, step)
    return []


def _capacity(run: RunData) -> tuple[float | None, str]:
    if run.shape.gpu_mem_gib:
        return float(run.shape.gpu_mem_gib), run.shape.sources.get("gpu_mem_gib", "shape")
    if run.shape.gpu_model:
        from core.gpus import find

        gpu = find(run.shape.gpu_model)
        if gpu is not None:
            return gpu.memory_gib, f"GPU catalog ({gpu.name})"
    return None, ""


def _peak(run: RunData) -> tuple[str, str, float, int] | None:
    """(series, counter kind, value, step) of the highest logged memory counter."""
    best = None
    for name, counter in COUNTERS:
        series = run.get(name)
        if series is None or not np.isfinite(series.values).any():
            continue
        i = int(np.nanargmax(series.values))
        if best is None or series.values[i] > best[2]:
            best = (name, counter, float(series.values[i]), int(series.steps[i]))
    return best


def _spare(run: RunData, text: str, evidence: dict, name: str, step: int) -> list[Finding]:
    usable = (1 - MARGIN) * evidence["capacity_gib"]
    batch = run.shape.micro_batch
    modelled = _largest_batch(run, evidence["peak_gib"], evidence["counter"], usable)
    if modelled is not None:
        growth, how = modelled / batch, "memory model"
        evidence.update(largest_micro_batch=modelled)
    else:
        growth, how = usable / evidence["peak_gib"], "proportional"
    if growth < MIN_GROWTH:
        return []
    evidence.update(growth=round(growth, 2), estimate=how)
    to = f" (micro batch {batch} → about {int(batch * growth)})" if batch else ""
    note = ("from the memory model of this run's shape" if modelled is not None else
            "proportional estimate, which ignores that weights and optimizer states do not grow")
    return [Finding(
        "memory_spare", INFO,
        f"{text}: the micro batch could grow about {growth:.1f}×{to} and keep a 15 % margin "
        f"({note})",
        "The batch, sequence length or model is small for this GPU.",
        "Raise the micro batch (and scale the LR with the batch), lengthen sequences, or run on a "
        "smaller or shared GPU.", step, step, name, (step,), evidence,
    )]


def _largest_batch(run: RunData, peak: float, counter: str, usable: float) -> int | None:
    """The largest micro batch whose modelled memory, shifted to meet the measured peak, fits.

    None when the shape does not state the model, micro batch and sequence length.
    """
    from core.memory import GIB, SetupError, estimate
    from core.memory.from_shape import ShapeIncomplete, inputs_from_shape
    from core.models import ModelError

    if not run.shape.micro_batch or not run.shape.seq_len:
        return None
    try:
        spec, setup, _ = inputs_from_shape(run.shape)
        def modelled(batch: int) -> float:
            return estimate(spec, setup.but(micro_batch=batch)).reading(counter) / GIB
        offset = peak - modelled(setup.micro_batch)
        low, high = setup.micro_batch, setup.micro_batch * MAX_GROWTH
        while low < high:  # memory grows with the batch: bisect for the last one that fits
            mid = (low + high + 1) // 2
            low, high = (mid, high) if modelled(mid) + offset <= usable else (low, mid - 1)
    except (ShapeIncomplete, ModelError, SetupError):
        return None
    return low
