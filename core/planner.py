"""Layouts that fit, in the order a user would accept them.

For a model, a setup and the GPU models to compare, the planner walks GPU
counts upward on each model and, on every layout of that many GPUs (data
parallel, ZeRO / FSDP, tensor parallel inside a node, pipeline across
nodes), looks for the fastest way to fit at three levels of change:

0. **keeps the experiment**: as asked, or with knobs that keep the maths —
   a smaller micro batch with more gradient accumulation (same samples per
   optimizer step), recompute, a fused loss, activation offload, sharding,
   optimizer and parameter offload (with the host RAM they need);
1. **changes the optimizer**: 8-bit or paged 8-bit AdamW on top of those;
2. **changes the experiment** (shown apart): LoRA or QLoRA instead of full
   fine-tuning, a shorter sequence.

Plans rank by level, then by what a token costs (dollars where the catalog
prices the GPU, else GPU-seconds), so an offload plan that needs few GPUs
but crawls does not outrank one that runs as asked. On each GPU model the
"as asked" layout (no knob turned) is listed too, however many GPUs and
nodes it takes. Knobs are only those the framework offers. Every plan keeps
the margin free on the figure it shows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache

from core.gpus import GPU
from core.memory import GIB, ModelSpec, Setup, SetupError, estimate
from core.memory.frameworks import framework as framework_preset
from core.metrics import MARGIN
from core.throughput import (
    ACTIVATION_OFFLOAD_SPEED,
    DEFAULT_MFU,
    FULL_SPEED_TOKENS,
    SMALL_BATCH_EXPONENT,
    offload,
    throughput,
    training_flops_per_token,
)

__all__ = ["DEFAULT_MFU", "LEVELS", "MARGIN", "Fit", "Plan", "Predict", "analytical",
           "check_fit", "fits", "knob_options", "largest", "plan", "plan_for", "plans_on",
           "throughput", "training_flops_per_token"]

TP_SIZES = (1, 2, 4, 8)
PP_SIZES = (1, 2, 4, 8, 16)
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_MICRO_BATCH = 4096
LEVELS = ("keeps the experiment", "changes the optimizer", "changes the experiment")
AS_ASKED = "as asked"

Predict = Callable[[ModelSpec, Setup, GPU], float]


def analytical(spec: ModelSpec, setup: Setup, gpu: GPU) -> float:
    """Device bytes per GPU the run needs, from the analytical model."""
    return _required(spec, setup)


@lru_cache(maxsize=65536)
def _required(spec: ModelSpec, setup: Setup) -> float:
    """Estimates repeat across GPU models (memory does not depend on the card): keep them."""
    return estimate(spec, setup).required


@dataclass(frozen=True)
class Fit:
    """Whether one setup fits one GPU model."""

    gpu: str
    fits: bool
    device_gib: float
    headroom_gib: float  # memory left after the predicted peak (negative: short by)
    max_micro_batch: int  # largest micro batch that fits with the margin (0: none)


@dataclass(frozen=True)
class Plan:
    """One layout on one GPU model, with the knobs it turned and what they cost."""

    gpu: str
    setup: Setup
    device_gib: float
    capacity_gib: float
    fits: bool
    max_micro_batch: int
    max_seq_len: int
    tokens_per_s: float
    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    level: int = 0  # index into LEVELS
    speed: float = 1.0  # throughput against the same layout as asked
    host_ram_gib: float = 0.0  # per node, for CPU offload
    offload_s_per_step: float = 0.0
    usd_per_hour: float = 0.0  # the whole plan's GPUs

    @property
    def n_gpus(self) -> int:
        return self.setup.layout.n_gpus

    @property
    def nodes(self) -> int:
        return self.setup.layout.nodes

    @property
    def layout(self) -> str:
        return self.setup.layout.describe()

    @property
    def global_batch(self) -> int:
        return self.setup.global_batch

    @property
    def summary(self) -> str:
        """What the plan changes, first thing first ("as asked" when nothing)."""
        return "; ".join(self.changes) if self.changes else AS_ASKED

    def hours(self, tokens: float) -> float | None:
        return tokens / self.tokens_per_s / 3600 if tokens and self.tokens_per_s > 0 else None

    def cost(self, tokens: float) -> float | None:
        """Rental cost of ``tokens`` on this plan, when the catalog prices its GPU."""
        hours = self.hours(tokens)
        return hours * self.usd_per_hour if hours and self.usd_per_hour else None


def fits(device_bytes: float, gpu: GPU, margin: float = MARGIN) -> bool:
    """The run fits when it leaves ``margin`` of the card free."""
    return device_bytes <= (1 - margin) * gpu.memory_gib * GIB


def check_fit(spec: ModelSpec, setup: Setup, gpu: GPU, predict: Predict = analytical,
              margin: float = MARGIN) -> Fit:
    device = predict(spec, setup, gpu)
    best = largest(lambda b: fits(predict(spec, setup.but(micro_batch=b), gpu), gpu, margin),
                   1, MAX_MICRO_BATCH)
    return Fit(gpu.name, fits(device, gpu, margin), device / GIB,
               gpu.memory_gib - device / GIB, best)


def largest(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest n in [lo, hi] with ok(n), for ok monotone (true then false); 0 if none."""
    if not ok(lo):
        return 0
    step = lo
    while step * 2 <= hi and ok(step * 2):
        step *= 2
    good, bad = step, min(hi + 1, step * 2)
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if ok(mid) else (good, mid)
    return good


@dataclass(frozen=True)
class _Search:
    """One planning question: the model, what was asked, and how to judge a candidate."""

    spec: ModelSpec
    asked: Setup
    predict: Predict
    margin: float
    rate: Callable[[GPU], float]
    batch: int  # samples per optimizer step to keep
    fixed_batch: bool  # the user stated it: more replicas may not grow it

    def device(self, setup: Setup, gpu: GPU) -> float | None:
        try:
            return self.predict(self.spec, setup, gpu)
        except SetupError:
            return None

    def ok(self, setup: Setup, gpu: GPU) -> bool:
        device = self.device(setup, gpu)
        return device is not None and fits(device, gpu, self.margin)


def plan(spec: ModelSpec, setup: Setup, gpus: Iterable[GPU], max_gpus: int | None = None,
         predict: Predict = analytical, mfu: Callable[[GPU], float] | None = None,
         margin: float = MARGIN, limit: int = 12, global_batch: int | None = None) -> list[Plan]:
    """Plans that fit, ranked: level of change, then GPUs needed, then speed.

    ``global_batch`` fixes the samples per optimizer step; otherwise each
    data-parallel replica keeps the asked micro batch x accumulation.
    """
    search = _search(spec, setup, predict, mfu, margin, global_batch)
    gpus = {gpu.name: gpu for gpu in gpus}
    found = [p for gpu in gpus.values() for p in _plans_on(search, gpu, max_gpus)]
    ranked = sorted(found, key=lambda p: (p.level, _cost_per_token(p), p.n_gpus))
    kept = [p for p in ranked if p.level == 0][:limit]
    kept += [p for p in ranked if p.level > 0][:limit]
    return [_with_limits(search, p, gpus[p.gpu]) for p in kept]


def plans_on(spec: ModelSpec, setup: Setup, gpu: GPU, n_gpus: int, predict: Predict = analytical,
             mfu: Callable[[GPU], float] | None = None, margin: float = MARGIN,
             global_batch: int | None = None) -> list[Plan]:
    """On exactly ``n_gpus`` of one GPU model: the fastest plan at each level of change.

    :func:`plan` looks for the fewest GPUs; a user who owns eight cards, or a
    run that failed on eight, asks what runs on those eight.
    """
    search = _search(spec, setup, predict, mfu, margin, global_batch)
    best: dict[int, Plan] = {}
    for layout in _layouts(search, gpu, n_gpus):
        for level in range(3):
            found = _cheapest(search, layout, gpu, level)
            if found and (level not in best or found.tokens_per_s > best[level].tokens_per_s):
                best[level] = found
    return [_with_limits(search, best[level], gpu) for level in sorted(best)]


def plan_for(spec: ModelSpec, setup: Setup, asked: Setup, gpu: GPU, predict: Predict = analytical,
             mfu: Callable[[GPU], float] | None = None, margin: float = MARGIN,
             level: int = 0) -> Plan:
    """The plan for one chosen ``setup`` (its changes named against ``asked``), fitting or not."""
    search = _search(spec, asked, predict, mfu, margin, None)
    return _with_limits(search, _plan(search, setup, gpu, level), gpu)


def knob_options(setup: Setup, per_replica: int) -> dict[str, list]:
    """What each knob that keeps the maths can be set to, the asked value first.

    ``micro_batch``: micro batches dividing the replica's ``per_replica`` samples
    (accumulation makes up the rest); ``sharding``: (ZeRO stage, FSDP mode) pairs;
    ``offload``: (optimizer, parameters) pairs, which need sharding.
    """
    lay = setup.layout
    return {"micro_batch": _micro_batches(setup.micro_batch, per_replica),
            "recompute": _recomputes(setup),
            "loss": _losses(setup), "activation_offload": _activation_offloads(setup),
            "sharding": _sharding(setup, lay.dp, lay.pp), "offload": _offloads(setup)}


def _search(spec: ModelSpec, setup: Setup, predict: Predict, mfu: Callable[[GPU], float] | None,
            margin: float, global_batch: int | None) -> _Search:
    return _Search(spec, setup, predict, margin, mfu or (lambda gpu: DEFAULT_MFU),
                   global_batch or setup.micro_batch * setup.grad_accum, global_batch is not None)


def _cost_per_token(p: Plan) -> float:
    """Dollars per token where the catalog prices the GPU, else GPU-seconds per token."""
    rate = p.usd_per_hour / 3600 if p.usd_per_hour else p.n_gpus
    return rate / max(p.tokens_per_s, 1e-9)


def _plans_on(search: _Search, gpu: GPU, max_gpus: int | None) -> list[Plan]:
    """On one GPU model: the fewest GPUs for each level of change, and the as-asked layout.

    Counts grow until the setup fits as asked (or the budget ends); a level is
    looked for only on fewer GPUs than the experiment can be kept on.
    """
    out: list[Plan] = []
    found: set[int] = set()
    for n in (c for c in GPU_COUNTS if max_gpus is None or c <= max_gpus):
        best: dict[int, Plan] = {}
        for layout in _layouts(search, gpu, n):
            for level in (lvl for lvl in range(3) if lvl not in found):
                if level and 0 in best:
                    break
                plan_ = _cheapest(search, layout, gpu, level)
                if plan_ and (level not in best or plan_.tokens_per_s > best[level].tokens_per_s):
                    best[level] = plan_
        if 0 in best:
            best = {0: best[0]}
        out += best.values()
        found |= set(best) | ({1, 2} if 0 in best else set())
        if any(p.level == 0 and not p.changes for p in out):
            break
        if 0 in found:  # keep going only to find the as-asked layout
            as_asked = _as_asked_on(search, gpu, n * 2, max_gpus)
            out += as_asked
            break
    return out


def _as_asked_on(search: _Search, gpu: GPU, start: int, max_gpus: int | None) -> list[Plan]:
    """The fewest GPUs (from ``start``) that run the setup exactly as asked, if any."""
    for n in (c for c in GPU_COUNTS if c >= start and (max_gpus is None or c <= max_gpus)):
        fitting = [layout for layout in _layouts(search, gpu, n) if search.ok(layout, gpu)]
        if fitting:
            plans = [_plan(search, layout, gpu, 0) for layout in fitting]
            return [max(plans, key=lambda p: p.tokens_per_s)]
    return []


def _layouts(search: _Search, gpu: GPU, n: int) -> Iterator[Setup]:
    """Layouts of ``n`` GPUs in the article's order: DP, ZeRO, TP in a node, PP across nodes."""
    spec, setup = search.spec, search.asked
    for tp, pp in itertools.product(TP_SIZES, PP_SIZES):
        if n % (tp * pp) or tp > gpu.gpus_per_node or pp > spec.n_layers:
            continue
        if spec.n_heads % tp or (not spec.mla and spec.n_kv_heads % tp and tp % spec.n_kv_heads):
            continue
        if n % (tp * pp * setup.layout.cp):
            continue
        dp = n // (tp * pp * setup.layout.cp)
        per_replica = search.batch // dp if search.fixed_batch else search.batch
        if search.fixed_batch and search.batch % dp:
            continue  # the replicas cannot share the batch evenly
        micro = max(m for m in range(1, min(setup.micro_batch, per_replica) + 1)
                    if per_replica % m == 0)
        for zero, fsdp in _sharding(setup, dp, pp):
            yield setup.but(
                n_gpus=n, tp=tp, pp=pp, zero=zero, fsdp=fsdp, sequence_parallel=tp > 1,
                pp_schedule="1f1b", virtual_stages=1, gpus_per_node=gpu.gpus_per_node,
                micro_batch=micro, grad_accum=per_replica // micro)


def _sharding(setup: Setup, dp: int, pp: int) -> list[tuple[int, str | None]]:
    """ZeRO stages or FSDP to try: the asked one's family first, none when nothing to shard."""
    if dp == 1 or not setup.training:
        return [(0, None)]
    if setup.layout.fsdp:
        return [(0, None), (0, "grad-op"), (0, "full")]
    stages = (0, 1) if pp > 1 else (0, 1, 2, 3)  # DeepSpeed's pipeline takes ZeRO 0-1 only
    return [(z, None) for z in stages]


def _cheapest(search: _Search, layout: Setup, gpu: GPU, level: int) -> Plan | None:
    """The fastest way to fit this layout at ``level`` of change, or None."""
    for start in _level_starts(search, layout, level):
        combos = _knob_mixes(search, start)
        if not combos or not search.ok(_turned(start, combos[-1]), gpu):
            continue  # even the lightest mix does not fit
        seq = start.seq_len / start.layout.cp
        combos.sort(key=lambda mix: _speed(mix, seq), reverse=True)
        chosen = next(c for c in (_turned(start, m) for m in combos) if search.ok(c, gpu))
        return _plan(search, chosen, gpu, level)
    return None


def _level_starts(search: _Search, layout: Setup, level: int) -> Iterator[Setup]:
    asked = search.asked
    if level == 0:
        yield layout
    elif level == 1 and asked.training and asked.optimizer in ("adamw", "paged-adamw"):
        yield layout.but(optimizer="adamw-8bit")
        yield layout.but(optimizer="paged-adamw-8bit")
    elif level == 2 and asked.training:
        if asked.method == "full":
            yield layout.but(method="lora", optimizer="adamw")
        if asked.method in ("full", "lora"):
            yield layout.but(method="qlora", precision="nf4", optimizer="adamw")
        seq = asked.seq_len // 2
        while seq >= 512:
            yield layout.but(seq_len=seq)
            seq //= 2


# A mix of knobs: micro batch, gradient accumulation, recompute, loss, activation offload,
# optimizer offload, parameter offload.
Mix = tuple[int, int, str, str, bool, bool, bool]


def _knob_mixes(search: _Search, start: Setup) -> list[Mix]:
    """Every mix of the knobs that keep the maths on ``start``, the lightest last."""
    per_replica = _per_replica(search, start)
    if per_replica is None:
        return []
    return [(micro, per_replica // micro, recompute, loss, act, off[0], off[1])
            for micro, recompute, loss, act, off in itertools.product(
                _micro_batches(search.asked.micro_batch, per_replica), _recomputes(start),
                _losses(start), _activation_offloads(start), _offloads(start))
            if not (start.optimizer_in_backward and per_replica // micro > 1)]


def _turned(start: Setup, mix: Mix) -> Setup:
    micro, accum, recompute, loss, act, off_optimizer, off_params = mix
    return start.but(micro_batch=micro, grad_accum=accum, recompute=recompute, loss=loss,
                     activation_offload=act, offload_optimizer=off_optimizer,
                     offload_params=off_params)


def _per_replica(search: _Search, setup: Setup) -> int | None:
    """Samples each data-parallel replica takes per step (None: the batch cannot be kept)."""
    dp = setup.layout.dp
    if search.fixed_batch:
        return search.batch // dp if search.batch % dp == 0 else None
    return search.batch


def _micro_batches(asked: int, per_replica: int) -> list[int]:
    """The asked micro batch, then halvings that divide the replica's samples, down to 1."""
    micro, out = min(asked, per_replica), []
    while micro >= 1:
        if per_replica % micro == 0:
            out.append(micro)
        micro //= 2
    return out if out[-1:] == [1] else out + [1]


def _recomputes(setup: Setup) -> list[str]:
    """The asked recompute, then the heavier ones the framework offers (full always)."""
    if not setup.training:
        return [setup.recompute]
    order = ("none", "selective", "op", "full")
    offered = _knobs(setup) | {"full", setup.recompute}
    if setup.attention != "eager":  # selective only drops eager attention's score matrices
        offered.discard("selective")
    return [r for r in order[order.index(setup.recompute):] if r in offered | {setup.recompute}]


def _losses(setup: Setup) -> list[str]:
    if setup.loss == "fused" or not setup.training or "fused_loss" not in _knobs(setup):
        return [setup.loss]
    return [setup.loss, "fused"]


def _activation_offloads(setup: Setup) -> list[bool]:
    if setup.activation_offload or "activation_offload" not in _knobs(setup):
        return [setup.activation_offload]
    return [False, True] if setup.training else [False]


def _knobs(setup: Setup) -> set[str]:
    return set(framework_preset(setup.framework).knobs)


def _offloads(setup: Setup) -> list[tuple[bool, bool]]:
    lay = setup.layout
    out = [(lay.offload_optimizer, lay.offload_params)]
    if setup.training and (lay.zero or lay.fsdp) and not setup.optimizer_in_backward:
        out.append((True, lay.offload_params))
        if lay.shards_params:
            out.append((True, True))
    return list(dict.fromkeys(out))


# How much of its speed each knob keeps (estimates for ranking; the plan's throughput figure
# charges offload its real transfer time).
RECOMPUTE_SPEED = {"none": 1.0, "selective": 0.97, "op": 0.88, "full": 0.75}
OFFLOAD_SPEED = {(False, False): 1.0, (True, False): 0.8, (True, True): 0.6}


def _speed(mix: Mix, seq: float) -> float:
    """Share of its speed a mix keeps: the planner tries the fastest first."""
    micro, _, recompute, loss, act, off_optimizer, off_params = mix
    factor = RECOMPUTE_SPEED[recompute] * min(1.0, (micro * seq / FULL_SPEED_TOKENS)
                                              ** SMALL_BATCH_EXPONENT)
    factor *= OFFLOAD_SPEED.get((off_optimizer, off_params), 0.6)
    factor *= ACTIVATION_OFFLOAD_SPEED if act else 1.0
    return factor * (0.99 if loss == "fused" else 1.0)


def _layout_fields(setup: Setup) -> dict:
    lay = setup.layout
    return {"n_gpus": lay.n_gpus, "tp": lay.tp, "pp": lay.pp, "zero": lay.zero, "fsdp": lay.fsdp,
            "sequence_parallel": lay.sequence_parallel, "gpus_per_node": lay.gpus_per_node}


def _plan(search: _Search, setup: Setup, gpu: GPU, level: int) -> Plan:
    """A plan for a setup that fits (its largest micro batch and sequence come later)."""
    spec = search.spec
    device = search.device(setup, gpu) or 0.0
    speed = throughput(spec, setup, gpu, search.rate(gpu))
    baseline = throughput(spec, search.asked.but(**_layout_fields(setup)), gpu, search.rate(gpu))
    moved = offload(spec, setup, gpu)
    return Plan(
        gpu.name, setup, device / GIB, gpu.memory_gib, fits(device, gpu, search.margin), 0, 0,
        speed, _changes(search, setup), _warnings(setup, gpu), level,
        min(1.0, speed / baseline) if baseline else 1.0, moved.host_ram_gib,
        moved.seconds_per_step, gpu.usd_per_hour * setup.layout.n_gpus)


def _with_limits(search: _Search, p: Plan, gpu: GPU) -> Plan:
    """The plan with the largest micro batch and sequence its knobs allow."""
    def grows(name: str) -> Callable[[int], bool]:
        return lambda v: search.ok(p.setup.but(**{name: v}), gpu)

    return replace(p, max_micro_batch=largest(grows("micro_batch"), 1, MAX_MICRO_BATCH),
                   max_seq_len=largest(grows("seq_len"), 1, 1 << 22))


def _changes(search: _Search, chosen: Setup) -> tuple[str, ...]:
    """What the plan changes from what was asked, the experiment first, then the knobs."""
    asked, out = search.asked, []
    for name in ("method", "precision", "optimizer", "seq_len"):
        a, b = getattr(asked, name), getattr(chosen, name)
        if a != b:
            out.append(f"{name.replace('_', ' ')} {a} -> {b}")
    if chosen.micro_batch != asked.micro_batch:
        out.append(f"micro batch {asked.micro_batch} -> {chosen.micro_batch} with gradient "
                   f"accumulation {chosen.grad_accum} (same {chosen.micro_batch * chosen.grad_accum}"
                   " samples per replica and step)")
    for name, label in (("recompute", "recompute"), ("loss", "loss")):
        if getattr(chosen, name) != getattr(asked, name):
            out.append(f"{label} {getattr(asked, name)} -> {getattr(chosen, name)}")
    if chosen.activation_offload and not asked.activation_offload:
        out.append("activations offloaded to CPU memory")
    if chosen.layout.offload_optimizer and not asked.layout.offload_optimizer:
        out.append("optimizer state offloaded to CPU memory")
    if chosen.layout.offload_params and not asked.layout.offload_params:
        out.append("parameters offloaded to CPU memory")
    return tuple(out)


def _warnings(setup: Setup, gpu: GPU) -> tuple[str, ...]:
    lay = setup.layout
    warnings = []
    if lay.tp > 1 and not gpu.fast_link:
        warnings.append(f"TP{lay.tp} over {gpu.link.upper()}: every layer all-reduces across "
                        f"a slow link; prefer PP or ZeRO on {gpu.name}")
    if lay.tp * lay.pp > 1 and lay.n_gpus > gpu.gpus_per_node and lay.tp > 1:
        warnings.append("spans nodes: keep TP inside a node and use PP or DP between nodes")
    return tuple(warnings)
