"""Layouts that fit: the seed article's decision list turned into an enumeration.

For a model, a setup and a GPU budget, try data parallelism first (cheapest
communication), then ZeRO stages, tensor parallelism inside a node (only over
NVLink-class links), pipeline parallelism across nodes; on each layout apply
the cheapest knobs in order (recompute, 8-bit optimizer, offload, then LoRA
and QLoRA when full fine-tuning cannot fit). Each plan keeps a 15 % margin,
the largest micro batch and sequence that fit, and a throughput estimate from
6·N·tokens + attention FLOPs at a model-FLOPs utilisation (default 40 %).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from core.gpus import GPU
from core.memory import GIB, ModelSpec, Setup, SetupError, estimate

MARGIN = 0.15  # the seed article: keep 15-20 % of the card free
DEFAULT_MFU = 0.40
TP_SIZES = (1, 2, 4, 8)
PP_SIZES = (1, 2, 4, 8, 16)
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_MICRO_BATCH = 4096
PCIE_TP_SLOWDOWN = 0.5  # TP all-reduces every layer; over PCIe they dominate
OFFLOAD_SLOWDOWN = 0.6

Predict = Callable[[ModelSpec, Setup, GPU], float]


def analytical(spec: ModelSpec, setup: Setup, gpu: GPU) -> float:
    """Device bytes per GPU (what nvidia-smi would show) from the analytical model."""
    return estimate(spec, setup).device


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
    """One layout on one GPU model, with the knobs it needed."""

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

    @property
    def n_gpus(self) -> int:
        return self.setup.layout.n_gpus

    @property
    def layout(self) -> str:
        return self.setup.layout.describe()


def fits(device_bytes: float, gpu: GPU, margin: float = MARGIN) -> bool:
    return device_bytes * (1 + margin) <= gpu.memory_gib * GIB


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


def plan(spec: ModelSpec, setup: Setup, gpus: Iterable[GPU], max_gpus: int = 8,
         predict: Predict = analytical, mfu: Callable[[GPU], float] | None = None,
         margin: float = MARGIN, limit: int = 12) -> list[Plan]:
    """Feasible layouts ranked: the asked method first, then fewest GPUs, then fastest.

    Per GPU model and layout (GPUs, TP, PP) only the cheapest way to fit is
    kept: the lowest ZeRO stage with the fewest knobs turned.
    """
    rate = mfu or (lambda gpu: DEFAULT_MFU)
    gpus = list(gpus)
    best: dict[tuple, tuple] = {}
    for n in (c for c in GPU_COUNTS if c <= max_gpus):
        if sum(1 for v in best.values() if not v[0][0]) >= limit:
            break  # enough plans keep the method on fewer GPUs; more GPUs cannot rank higher
        for gpu in gpus:
            for candidate, warnings in _layouts(spec, setup, gpu, n):
                lay = candidate.layout
                key = (gpu.name, n, lay.tp, lay.pp)
                if key in best and best[key][0][:2] == (False, 0):
                    continue  # fits as asked at a lower ZeRO stage: nothing here beats it
                chosen = _cheapest_knobs(spec, candidate, gpu, predict, margin)
                if chosen is None:
                    continue
                knobbed, device, rung = chosen
                cost = (knobbed.method != setup.method, rung, knobbed.layout.zero)
                if key not in best or cost < best[key][0]:
                    speed = throughput(spec, knobbed, gpu, rate(gpu))
                    best[key] = (cost, gpu, knobbed, device, speed, warnings)
    ranked = sorted(best.values(), key=lambda v: (v[0][0], v[2].layout.n_gpus, -v[4]))
    return [_plan(spec, knobbed, gpu, device, speed, predict, margin,
                  _describe_changes(setup, knobbed), warnings)
            for _, gpu, knobbed, device, speed, warnings in ranked[:limit]]


def _layouts(spec: ModelSpec, setup: Setup, gpu: GPU, n: int):
    """Layouts of ``n`` GPUs in the article's order: DP, ZeRO, TP in a node, PP across nodes."""
    for tp in TP_SIZES:
        for pp in PP_SIZES:
            if n % (tp * pp) or tp > gpu.gpus_per_node or pp > spec.n_layers:
                continue
            if spec.n_heads % tp or (not spec.mla and spec.n_kv_heads % tp
                                     and tp % spec.n_kv_heads):
                continue
            dp = n // (tp * pp)
            for zero in (0, 1, 2, 3) if dp > 1 and setup.training else (0,):
                candidate = setup.but(
                    n_gpus=n, tp=tp, pp=pp, zero=zero, fsdp=None, sequence_parallel=tp > 1,
                    pp_schedule="1f1b", virtual_stages=1, offload_optimizer=False,
                    offload_params=False, gpus_per_node=gpu.gpus_per_node,
                    grad_accum=max(setup.grad_accum, pp),
                )
                yield candidate, _layout_warnings(candidate, gpu)


def _layout_warnings(setup: Setup, gpu: GPU) -> tuple[str, ...]:
    lay = setup.layout
    warnings = []
    if lay.tp > 1 and not gpu.fast_link:
        warnings.append(f"TP{lay.tp} over {gpu.link.upper()}: every layer all-reduces across "
                        f"a slow link; prefer PP or ZeRO on {gpu.name}")
    if lay.tp * lay.pp > 1 and lay.n_gpus > gpu.gpus_per_node and lay.tp > 1:
        warnings.append("spans nodes: keep TP inside a node and use PP or DP between nodes")
    return tuple(warnings)


def _knob_ladder(setup: Setup):
    """Cheapest first: recompute, 8-bit optimizer, offload; each lighter method afresh.

    Inference has one knob, the weights' storage: fp8, then int8, then NF4.
    """
    if not setup.training:
        yield setup
        order = ("bf16", "fp16", "fp8", "int8", "nf4")
        start = order.index(setup.precision) + 1 if setup.precision in order else len(order)
        for precision in order[max(start, 2):]:
            yield setup.but(precision=precision)
        return
    methods = [setup]
    if setup.method == "full":
        methods.append(setup.but(method="lora", optimizer="adamw"))
    if setup.method in ("full", "lora"):
        methods.append(setup.but(method="qlora", precision="nf4", optimizer="adamw"))
    for start in methods:
        current = start
        yield current
        if start.training and start.recompute != "full":
            current = current.but(recompute="full")
            yield current
        if start.optimizer == "adamw":
            current = current.but(optimizer="adamw-8bit")
            yield current
        if start.training and (current.layout.zero or current.layout.fsdp):
            yield current.but(offload_optimizer=True)


def _cheapest_knobs(spec: ModelSpec, setup: Setup, gpu: GPU, predict: Predict, margin: float):
    for rung, candidate in enumerate(_knob_ladder(setup)):
        try:
            device = predict(spec, candidate, gpu)
        except SetupError:
            continue
        if fits(device, gpu, margin):
            return candidate, device, rung
    return None


def _plan(spec: ModelSpec, setup: Setup, gpu: GPU, device: float, speed: float,
          predict: Predict, margin: float, changes: tuple[str, ...],
          warnings: tuple[str, ...]) -> Plan:
    def ok(name: str) -> Callable[[int], bool]:
        return lambda n: fits(predict(spec, setup.but(**{name: n}), gpu), gpu, margin)

    return Plan(gpu.name, setup, device / GIB, gpu.memory_gib, fits(device, gpu, margin),
                largest(ok("micro_batch"), 1, MAX_MICRO_BATCH), largest(ok("seq_len"), 1, 1 << 22),
                speed, changes, warnings)


def _describe_changes(asked: Setup, chosen: Setup) -> tuple[str, ...]:
    out = []
    for name in ("method", "precision", "optimizer", "recompute", "grad_accum"):
        a, b = getattr(asked, name), getattr(chosen, name)
        if a != b:
            out.append(f"{name.replace('_', ' ')} {a} -> {b}")
    if chosen.layout.offload_optimizer and not asked.layout.offload_optimizer:
        out.append("optimizer state offloaded to CPU")
    return tuple(out)


def training_flops_per_token(spec: ModelSpec, setup: Setup) -> float:
    """6·N + 12·L·(heads·head_dim)·s (PaLM appendix B); recompute adds a forward (8·N)."""
    n = spec.active_params
    attention = 12 * spec.n_layers * spec.n_heads * spec.head_dim * setup.seq_len
    if setup.method == "inference":
        return 2 * n + attention / 3
    factor = 8 if setup.recompute == "full" else 6
    if setup.method in ("lora", "qlora"):
        factor -= 2  # frozen weights need no weight gradients
    return factor * n + attention


def throughput(spec: ModelSpec, setup: Setup, gpu: GPU, mfu: float = DEFAULT_MFU) -> float:
    """Estimated tokens per second for the whole run."""
    lay = setup.layout
    if setup.method == "inference":  # decoding reads every weight (and the KV cache) per step
        est = estimate(spec, setup)
        per_gpu = est.breakdown["weights"] + est.breakdown["kv_cache"]
        steps = gpu.bandwidth_tbs * 1e12 * 0.7 / max(per_gpu, 1.0)
        return steps * setup.micro_batch * lay.dp
    flops = gpu.peak_tflops(setup.precision) * 1e12 * mfu * lay.n_gpus
    rate = flops / training_flops_per_token(spec, setup)
    if lay.pp > 1:  # the 1F1B bubble: (p - 1) / (m + p - 1) of the step idles
        m = max(setup.grad_accum, 1)
        rate *= m / (m + lay.pp - 1)
    if lay.tp > 1 and not gpu.fast_link:
        rate *= PCIE_TP_SLOWDOWN
    if lay.offload_optimizer:
        rate *= OFFLOAD_SLOWDOWN
    return rate
