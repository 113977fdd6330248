"""Canonical metric names and the aliases that formats use for them.

Every reader maps what its format calls a metric onto the names of docs/design.md,
scaling units on the way (memory to GiB, time to seconds), and keeps the
original name so nothing is lost. One table here, so a new alias is one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GIB = 1024.0**3
MIB = 1024.0**2

# The memory series and the counter each records: torch's max_memory_allocated, its caching
# allocator's max_memory_reserved, and the device as the driver (nvidia-smi) sees it.
MEMORY_COUNTERS: dict[str, str] = {"mem_peak_gib": "allocated", "mem_reserved_gib": "reserved",
                                   "mem_used_gib": "device"}
# The seed article: keep 15-20 % of the card free; Headroom plans with the lower end.
MARGIN = 0.15
MARGINS = (0.15, 0.20)

# Bytes in one unit, for memory figures written with a unit suffix.
MEMORY_UNITS: dict[str, float] = {
    "b": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "kib": 1024.0,
    "mb": 1e6,
    "mib": MIB,
    "gb": 1e9,
    "gib": GIB,
    "tb": 1e12,
    "tib": 1024.0**4,
}

CANONICAL: dict[str, str] = {
    "loss": "training loss",
    "eval_loss": "evaluation loss",
    "lr": "learning rate",
    "grad_norm": "gradient norm",
    "loss_scale": "fp16 dynamic loss scale",
    "epoch": "epoch (fractional)",
    "mem_peak_gib": "peak allocated device memory, GiB (torch max_memory_allocated)",
    "mem_reserved_gib": "peak memory reserved by the caching allocator, GiB",
    "mem_used_gib": "device memory as the driver sees it, GiB (nvidia-smi)",
    "tokens_per_s": "tokens per second",
    "samples_per_s": "samples per second",
    "step_time_s": "seconds per optimizer step",
    "tflops": "achieved TFLOP/s per GPU",
    "mfu": "model FLOPs utilisation, %",
    "batch_size": "global batch size, samples",
    "micro_batch_size": "micro batch per GPU, samples",
    "seq_len": "sequence length, tokens",
    "tokens_seen": "tokens consumed so far",
    "samples_seen": "samples consumed so far",
    "skipped_iters": "skipped iterations",
    "nan_iters": "iterations with NaN/Inf",
}


@dataclass(frozen=True)
class Alias:
    """Where an original metric name lands: canonical name and unit scale."""

    name: str
    scale: float = 1.0


def _table(**groups: tuple[str, ...]) -> dict[str, Alias]:
    return {alias: Alias(name) for name, aliases in groups.items() for alias in aliases}


# Keys are lower-cased original names. Scaled aliases are listed separately below.
ALIASES: dict[str, Alias] = _table(
    loss=(
        "loss", "train_loss", "train/loss", "lm loss", "lm_loss", "train_loss_step",
        "training_loss", "train/loss_step", "loss_metrics/global_avg_loss", "train/lm_loss",
        "lm-loss", "train_lm_loss", "train/lm loss",
    ),
    eval_loss=(
        "eval_loss", "val_loss", "eval/loss", "validation_loss", "val/loss", "valid_loss",
        "validation/loss", "val_loss_epoch", "validation_metrics/loss", "eval/lm_loss",
        "lm loss validation", "val/lm_loss",
    ),
    lr=(
        "lr", "learning_rate", "learning rate", "train/learning_rate", "train/lr",
        "optimizer/lr", "lr-adamw", "lr-adam", "lr-sgd", "learning-rate",
    ),
    grad_norm=("grad_norm", "grad norm", "gnorm", "train/grad_norm", "grad-norm"),
    loss_scale=("loss_scale", "loss scale", "loss-scale", "train/loss_scale"),
    epoch=("epoch", "train/epoch"),
    tokens_per_s=(
        "tokens_per_s", "tps", "throughput(tps)", "tokens/s", "train/tokens_per_second",
        "throughput/tokens_per_second", "tokens_per_second", "tokens_global_per_sec", "wps",
        "train_tokens_per_second",
    ),
    samples_per_s=(
        "samples_per_s", "samples_per_second", "samplespersec", "throughput/samples_per_second",
        "samples per second",
    ),
    step_time_s=("step_time_s", "iteration_time", "time_metrics/end_to_end(s)"),
    tflops=("tflops", "throughput per gpu (tflop/s/gpu)", "throughput/tflops", "tflop/s/gpu"),
    mfu=("mfu", "mfu(%)", "throughput/mfu"),
    batch_size=(
        "batch_size", "global batch size", "global_batch_size", "train/global_batch_size", "batch-size",
    ),
    micro_batch_size=("micro_batch_size", "micro batch size"),
    seq_len=("seq_len", "seq_length", "sequence_length", "actual seqlen"),
    tokens_seen=(
        "tokens_seen", "num_input_tokens_seen", "consumed tokens", "consumed_tokens",
        "num_tokens", "train/num_input_tokens_seen", "total_tokens", "ntokens_seen",
    ),
    samples_seen=("samples_seen", "consumed samples", "consumed_samples"),
    skipped_iters=("skipped_iters", "number of skipped iterations", "skipped"),
    nan_iters=("nan_iters", "number of nan iterations"),
    mem_peak_gib=(
        "mem_peak_gib", "memory/max_allocated (gib)", "memory/max_mem_allocated(gib)",
        "memory/max_allocated(gib)", "max_mem_allocated_gib",
    ),
    mem_reserved_gib=(
        "mem_reserved_gib", "memory/max_reserved(gib)", "memory/device_reserved (gib)",
        "memory/device_mem_reserved(gib)",
    ),
    mem_used_gib=("mem_used_gib",),
)
ALIASES.update(
    {
        "elapsed time per iteration (ms)": Alias("step_time_s", 1e-3),
        "iteration-time": Alias("step_time_s"),
        "step_time_ms": Alias("step_time_s", 1e-3),
        "mem-max-allocated-bytes": Alias("mem_peak_gib", 1 / GIB),
        "mem-max-reserved-bytes": Alias("mem_reserved_gib", 1 / GIB),
        "max_memory_allocated": Alias("mem_peak_gib", 1 / GIB),
        "max_memory_reserved": Alias("mem_reserved_gib", 1 / GIB),
        # torch.cuda.memory_stats() keys, as Lightning's DeviceStatsMonitor logs them
        "allocated_bytes.all.peak": Alias("mem_peak_gib", 1 / GIB),
        "reserved_bytes.all.peak": Alias("mem_reserved_gib", 1 / GIB),
    }
)

_EVAL_PREFIX = re.compile(r"^(eval|val|validation|valid|test)[_/](?P<rest>.+)$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def resolve(original: str) -> Alias:
    """Canonical name and unit scale for a metric name as a format writes it.

    Unknown names pass through (trimmed), except that evaluation metrics are
    grouped under ``eval/<name>`` as docs/design.md asks.
    """
    key = _SPACES.sub(" ", original.strip()).lower()
    if key.startswith("devicestatsmonitor.") and "/" in key:
        key = key.split("/", 1)[1]  # Lightning: "DeviceStatsMonitor.on_train_batch_end/<stat>"
    if key in ALIASES:
        return ALIASES[key]
    if key.endswith("_step") and key.removesuffix("_step") in ALIASES:
        return ALIASES[key.removesuffix("_step")]  # Lightning's on_step copy of a metric
    if key.startswith("lr-") and "momentum" not in key:
        return Alias("lr")  # Lightning's LearningRateMonitor: lr-AdamW, lr-AdamW/pg1
    match = _EVAL_PREFIX.match(original.strip())
    if match:
        return Alias(f"eval/{match['rest']}")
    return Alias(original.strip())


def canonical(original: str) -> str:
    """The canonical name of ``original`` (see :func:`resolve`)."""
    return resolve(original).name


def to_gib(value: float, unit: str) -> float:
    """Convert a memory figure with a unit such as ``MB`` or ``GiB`` to GiB."""
    return value * MEMORY_UNITS[unit.strip().lower()] / GIB


def size_text(n_bytes: float) -> str:
    """A size on disk as people read it: 512 B, 3.4 MiB, 15.2 GiB (binary units, as GPUs)."""
    units = ("B", "KiB", "MiB", "GiB")
    power = 0
    while abs(n_bytes) >= 1024 and power < len(units) - 1:
        n_bytes /= 1024
        power += 1
    return f"{n_bytes:.0f} B" if power == 0 else f"{n_bytes:.1f} {units[power]}"
