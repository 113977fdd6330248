"""The smallest change that makes a run that ran out of GPU memory fit.

The OOM is a measurement: the run needed more than the card had, at least
the memory in use plus the allocation that failed ("Tried to allocate X ...
Y free of Z"). Where the model predicted less than that, the shortfall is
added to every figure below, so a proposal that only fits the model's
optimism is not made. The knobs are then tried in order of what they cost
the user, each rung allowed the cheaper knobs before it, on the run's own GPU
model and count, keeping the samples per optimizer step:

micro batch with more accumulation, recompute (selective, per op, full), a
fused loss, ZeRO / FSDP sharding, offload (activations, optimizer state,
parameters), an 8-bit or paged optimizer; then more GPUs of the same model,
then a bigger card.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from core.gpus import GPU, catalog
from core.memory import GIB, ModelSpec, Setup, SetupError, check
from core.planner import (
    GPU_COUNTS,
    MARGIN,
    Plan,
    Predict,
    analytical,
    fits,
    knob_options,
    plan_for,
    plans_on,
    throughput,
)

RUNGS = ("micro batch", "recompute", "fused loss", "sharding", "offload", "8-bit optimizer",
         "more GPUs", "bigger card")
EIGHT_BIT = ("adamw-8bit", "paged-adamw-8bit")


@dataclass(frozen=True)
class Failure:
    """What the OOM says the run needed, beside what the model predicted for it."""

    capacity_gib: float
    needed_gib: float  # a lower bound: memory in use plus the allocation that failed
    predicted_gib: float
    tried_gib: float | None = None
    free_gib: float | None = None

    @property
    def shortfall_gib(self) -> float:
        """How far the model fell short of the failure (0 when it saw the OOM coming)."""
        return max(0.0, self.needed_gib - self.predicted_gib)


@dataclass(frozen=True)
class Fix:
    """One change that fits, with its predicted memory and what it costs in speed."""

    rung: str
    plan: Plan  # its device_gib includes the failure's shortfall
    speed: float  # tokens per second against the failed run's

    @property
    def global_batch(self) -> int:
        return self.plan.setup.global_batch


def failure(spec: ModelSpec, setup: Setup, gpu: GPU, oom: dict) -> Failure:
    """The failure from an OOM event's sizes (GiB, as the log readers name them)."""
    capacity = _size(oom, "capacity_gib") or gpu.memory_gib
    free, tried = _size(oom, "free_gib"), _size(oom, "tried_gib")
    in_use = (capacity - free if free is not None else
              _size(oom, "in_use_gib") or _size(oom, "reserved_gib") or _size(oom, "allocated_gib"))
    needed = max(capacity, in_use + tried) if in_use is not None and tried else capacity
    return Failure(capacity, needed, analytical(spec, setup, gpu) / GIB, tried, free)


def run_gpu(name: str | None, capacity_gib: float) -> GPU:
    """The card a run used: its catalog entry with the capacity the run saw, or, for a card
    the catalog lacks, the nearest entry by memory under the run's own name."""
    from core.gpus import find

    found = find(name) if name else None
    if found is None:
        found = min(catalog().values(), key=lambda g: abs(g.memory_gib - capacity_gib))
        found = replace(found, name=name or f"{capacity_gib:g} GiB GPU", aliases=())
    return replace(found, memory_gib=capacity_gib)


def fixes(spec: ModelSpec, setup: Setup, gpu: GPU, failed: Failure, limit: int = 3,
          margin: float = MARGIN) -> list[Fix]:
    """The first ``limit`` rungs that fit, cheapest to the user first.

    A costlier rung is proposed only when it is faster than every proposal
    before it: otherwise the cheaper change wins outright.
    """
    predict = _raised(analytical, failed.shortfall_gib)
    base = throughput(spec, setup, gpu)
    found: list[Fix] = []
    for rung in RUNGS:
        chosen = _RUNG_SEARCH[rung](spec, setup, gpu, predict, margin)
        speed = chosen.tokens_per_s / base if chosen and base else 1.0
        if chosen is not None and all(speed > f.speed for f in found):
            found.append(Fix(rung, chosen, speed))
        if len(found) == limit:
            break
    return found


def _raised(predict: Predict, shortfall_gib: float) -> Predict:
    return lambda spec, setup, gpu: predict(spec, setup, gpu) + shortfall_gib * GIB


# Rungs 1-6: knobs on the run's own layout


def _knob_rung(level: int) -> Callable[..., Plan | None]:
    """The search for rung ``level``: its own knob turned, the cheaper ones free."""
    def search(spec: ModelSpec, asked: Setup, gpu: GPU, predict: Predict,
               margin: float) -> Plan | None:
        best: tuple[float, Setup] | None = None
        for candidate in _mixes(asked, level):
            if not _turned(asked, candidate, level) or not _valid(spec, candidate):
                continue
            if fits(predict(spec, candidate, gpu), gpu, margin):
                rate = throughput(spec, candidate, gpu)
                if best is None or rate > best[0]:
                    best = (rate, candidate)
        if best is None:
            return None
        return plan_for(spec, best[1], asked, gpu, predict, margin=margin,
                        level=1 if best[1].optimizer != asked.optimizer else 0)
    return search


def _mixes(asked: Setup, level: int) -> Iterator[Setup]:
    per_replica = asked.micro_batch * asked.grad_accum
    opts = knob_options(asked, per_replica)
    lay = asked.layout
    recomputes = opts["recompute"] if level >= 1 else [asked.recompute]
    losses = opts["loss"] if level >= 2 else [asked.loss]
    shardings = opts["sharding"] if level >= 3 else [(lay.zero, lay.fsdp)]
    optimizers = [asked.optimizer] + (list(EIGHT_BIT) if level >= 5 and asked.optimizer in (
        "adamw", "paged-adamw") else [])
    for micro, recompute, loss, (zero, fsdp), optimizer in itertools.product(
            opts["micro_batch"], recomputes, losses, shardings, optimizers):
        turned = asked.but(micro_batch=micro, grad_accum=per_replica // micro, recompute=recompute,
                           loss=loss, zero=zero, fsdp=fsdp, optimizer=optimizer)
        more = knob_options(turned, per_replica)
        offloads = more["offload"] if level >= 4 else [(lay.offload_optimizer, lay.offload_params)]
        activations = more["activation_offload"] if level >= 4 else [asked.activation_offload]
        for (off_optimizer, off_params), act in itertools.product(offloads, activations):
            yield turned.but(offload_optimizer=off_optimizer, offload_params=off_params,
                             activation_offload=act)


def _turned(asked: Setup, candidate: Setup, level: int) -> bool:
    """Whether the rung's own knob differs from the run's."""
    a, c = asked.layout, candidate.layout
    return [
        candidate.micro_batch != asked.micro_batch,
        candidate.recompute != asked.recompute,
        candidate.loss != asked.loss,
        (c.zero, c.fsdp) != (a.zero, a.fsdp),
        (c.offload_optimizer, c.offload_params, candidate.activation_offload)
        != (a.offload_optimizer, a.offload_params, asked.activation_offload),
        candidate.optimizer != asked.optimizer,
    ][level]


def _valid(spec: ModelSpec, setup: Setup) -> bool:
    lay = setup.layout
    if lay.offload_optimizer and not (lay.zero or lay.fsdp):
        return False  # offload needs a sharded optimizer (ZeRO-Offload, FSDP)
    try:
        check(spec, setup)
    except SetupError:
        return False
    return True


# Rungs 7-8: more of the same card, or a bigger one


def _more_gpus(spec: ModelSpec, asked: Setup, gpu: GPU, predict: Predict,
               margin: float) -> Plan | None:
    for n in (c for c in GPU_COUNTS if c > asked.layout.n_gpus):
        keeps = [p for p in plans_on(spec, asked, gpu, n, predict, margin=margin,
                                     global_batch=asked.global_batch) if p.level == 0]
        if keeps:
            return keeps[0]
    return None


def _bigger_card(spec: ModelSpec, asked: Setup, gpu: GPU, predict: Predict,
                 margin: float) -> Plan | None:
    bigger = sorted((g for g in catalog().values() if g.memory_gib > gpu.memory_gib),
                    key=lambda g: (g.memory_gib, g.usd_per_hour))
    for card in bigger:
        keeps = [p for p in plans_on(spec, asked, card, asked.layout.n_gpus, predict,
                                     margin=margin, global_batch=asked.global_batch)
                 if p.level == 0]
        if keeps:
            return keeps[0]
    return None


_RUNG_SEARCH = {**{rung: _knob_rung(level) for level, rung in enumerate(RUNGS[:6])},
                "more GPUs": _more_gpus, "bigger card": _bigger_card}


def _size(oom: dict, key: str) -> float | None:
    value = oom.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        and value > 0 else None
