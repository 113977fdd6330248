"""How fast a setup trains on a GPU model, and what its memory knobs cost in speed and host RAM.

Compute follows the PaLM appendix B count (6·N + 12·L·heads·head_dim·s
FLOPs per token) at a model-FLOPs utilisation (40 % unless the user's runs
say otherwise). Each knob the planner turns is charged where its cost comes
from: recompute repeats forward FLOPs, a smaller micro batch feeds smaller
matmuls, offload moves bytes over the host link and steps the optimizer on
the CPU. The factors are estimates for ranking plans, stated as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.gpus import GPU
from core.memory import GIB, ModelSpec, Setup, estimate
from core.memory.estimate import trainable_params

DEFAULT_MFU = 0.40
PCIE_TP_SLOWDOWN = 0.5  # TP all-reduces every layer; over PCIe they dominate
FULL_SPEED_TOKENS = 4096  # tokens per micro batch from which matmuls run at full speed
SMALL_BATCH_EXPONENT = 0.15  # (tokens / 4096) ** 0.15: 2k tokens ~ 90 %, 512 ~ 73 %
ACTIVATION_OFFLOAD_SPEED = 0.92  # torchtune: offload overlapped on CUDA streams
CPU_ADAM_PARAMS_PER_S = 1.0e9  # DeepSpeed's CPU Adam per node (AVX-512, fp32), order of magnitude
OFFLOAD_OVERLAP = 0.5  # share of host-link traffic hidden behind compute
HOST_BUFFER_FACTOR = 1.5  # DeepSpeed's additional_buffer_factor for CPU-side state


def training_flops_per_token(spec: ModelSpec, setup: Setup) -> float:
    """6·N + 12·L·(heads·head_dim)·s (PaLM appendix B); recompute repeats forward work."""
    n = spec.active_params
    attention = 12 * spec.n_layers * spec.n_heads * spec.head_dim * setup.seq_len
    if setup.method == "inference":
        return 2 * n + attention / 3
    factor = 6.0 + {"full": 2.0, "op": 1.0, "selective": 0.0}.get(setup.recompute, 0.0)
    attention *= 1.0 + {"selective": 1 / 3, "full": 1 / 3}.get(setup.recompute, 0.0)
    if setup.method in ("lora", "qlora"):
        factor -= 2  # frozen weights need no weight gradients
    return factor * n + attention


@dataclass(frozen=True)
class Offload:
    """What CPU offload asks of the host: RAM per node and link time per optimizer step."""

    host_ram_gib: float = 0.0
    seconds_per_step: float = 0.0  # host-link transfers and the CPU optimizer step, exposed


def offload(spec: ModelSpec, setup: Setup, gpu: GPU) -> Offload:
    """Host RAM (per node) and exposed seconds per step that optimizer / parameter offload cost.

    Each GPU sends its gradient shard down and takes its updated 16-bit
    parameters back every step (optimizer offload) and fetches its parameter
    shard for forward and again for backward (parameter offload); the CPU
    keeps fp32 master, moments and gradients (16 B per trainable parameter)
    with DeepSpeed's 1.5 buffer factor.
    """
    lay = setup.layout
    if not (lay.offload_optimizer or lay.offload_params):
        return Offload()
    shards = max(1, lay.shard_group) * lay.tp * lay.pp
    trainable = trainable_params(spec, setup)
    on_node = min(lay.n_gpus, gpu.gpus_per_node)
    host = 0.0
    link = 0.0
    if lay.offload_optimizer:
        host += 16.0 * trainable / shards * on_node
        link += 2 * 2.0 * trainable / shards
    if lay.offload_params:
        weights = estimate(spec, setup.but(offload_params=False)).breakdown["weights"]
        host += weights * on_node
        link += 2 * weights * setup.grad_accum
    cpu = trainable / max(1, lay.nodes) / CPU_ADAM_PARAMS_PER_S if lay.offload_optimizer else 0.0
    exposed = link / (gpu.host_link_gbs * 1e9) * (1 - OFFLOAD_OVERLAP) + cpu
    return Offload(host * HOST_BUFFER_FACTOR / GIB, exposed)


def micro_batch_speed(setup: Setup) -> float:
    """Matmul efficiency of a micro batch: full from 4k tokens, lower below (an estimate)."""
    tokens = setup.micro_batch * setup.seq_len / setup.layout.cp
    return min(1.0, (tokens / FULL_SPEED_TOKENS) ** SMALL_BATCH_EXPONENT)


def throughput(spec: ModelSpec, setup: Setup, gpu: GPU, mfu: float = DEFAULT_MFU) -> float:
    """Estimated tokens per second for the whole run."""
    lay = setup.layout
    if setup.method == "inference":  # decoding reads every weight (and the KV cache) per step
        est = estimate(spec, setup)
        per_gpu = est.breakdown["weights"] + est.breakdown["kv_cache"]
        steps = gpu.bandwidth_tbs * 1e12 * 0.7 / max(per_gpu, 1.0)
        return steps * setup.micro_batch * lay.dp
    flops = gpu.peak_tflops(setup.precision) * 1e12 * mfu * lay.n_gpus
    rate = flops / training_flops_per_token(spec, setup) * micro_batch_speed(setup)
    if lay.pp > 1:  # the 1F1B bubble: (p - 1) / (m + p - 1) of the step idles
        m = max(setup.grad_accum, 1)
        rate *= m / (m + lay.pp - 1)
    if lay.tp > 1 and not gpu.fast_link:
        rate *= PCIE_TP_SLOWDOWN
    if setup.activation_offload:
        rate *= ACTIVATION_OFFLOAD_SPEED
    exposed = offload(spec, setup, gpu).seconds_per_step
    if exposed:
        tokens_per_step = setup.micro_batch * setup.grad_accum * setup.seq_len * lay.dp
        step = tokens_per_step / rate
        rate = tokens_per_step / (step + exposed)
    return rate
