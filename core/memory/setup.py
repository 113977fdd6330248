"""What a run does with a model: method, precision, optimizer, batch and parallel layout.

Plain dataclasses so the command line, the wizard and calibration build them
the same way; :func:`check` turns contradictory or out-of-range values into
one-line messages before any arithmetic happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.memory.frameworks import framework as framework_preset
from core.memory.precision import FROZEN_STORAGE, OPTIMIZERS, PRECISIONS, QUANTIZED
from core.memory.spec import ModelSpec, TargetError, lora_kinds
from core.shape import ATTENTION, LOSSES, METHODS, RECOMPUTE

FSDP_MODES = ("full", "grad-op", "hybrid")
PP_SCHEDULES = ("1f1b", "interleaved")
# How the loss meets the logits (core.shape.LOSSES): "standard" materialises b x s x vocab
# logits and upcasts them to fp32 (HF, torchtitan); "chunked" keeps the 16-bit logits and
# upcasts one chunk at a time (torchtune's CEWithChunkedOutputLoss, LitGPT's
# chunked_cross_entropy); "fused" never materialises them (Liger, Cut Cross-Entropy).


class SetupError(ValueError):
    """A setup that cannot run as given; the message is one line for the user."""


@dataclass(frozen=True)
class Layout:
    """How the run is spread over GPUs."""

    n_gpus: int = 1
    zero: int = 0  # DeepSpeed ZeRO stage (Megatron's distributed optimizer is stage 1)
    fsdp: str | None = None  # "full" (ZeRO-3), "grad-op" (ZeRO-2), "hybrid" (full within a node)
    offload_optimizer: bool = False
    offload_params: bool = False
    tp: int = 1
    pp: int = 1
    cp: int = 1  # context parallelism: the sequence split over this many GPUs (ring attention)
    sequence_parallel: bool = False
    pp_schedule: str = "1f1b"
    virtual_stages: int = 1  # model chunks per pipeline rank (interleaved schedule)
    gpus_per_node: int = 8

    @property
    def model_parallel(self) -> int:
        """GPUs one replica of the model is spread over (TP x PP x CP)."""
        return self.tp * self.pp * self.cp

    @property
    def dp(self) -> int:
        return max(1, self.n_gpus // self.model_parallel)

    @property
    def shard_group(self) -> int:
        """GPUs that split optimizer state and gradients: data parallel x context parallel.

        FSDP and ZeRO shard over every rank that holds the same layers, and context
        parallel ranks do (torchtitan shards over dp_shard x cp).
        """
        return self.dp * self.cp

    @property
    def shards_params(self) -> bool:
        return self.zero >= 3 or self.fsdp in ("full", "hybrid")

    @property
    def shards_grads(self) -> bool:
        return self.zero >= 2 or self.fsdp is not None

    @property
    def shards_optimizer(self) -> bool:
        return self.zero >= 1 or self.fsdp is not None

    @property
    def param_shards(self) -> int:
        """How many ways parameters are split by sharded data parallelism."""
        if self.fsdp == "hybrid":
            return max(1, min(self.shard_group, self.gpus_per_node))
        return self.shard_group

    @property
    def nodes(self) -> int:
        return -(-self.n_gpus // max(1, self.gpus_per_node))

    def describe(self) -> str:
        parts = [f"{self.n_gpus} GPU" + ("s" if self.n_gpus > 1 else "")]
        if self.fsdp:
            parts.append(f"FSDP {self.fsdp}")
        elif self.zero:
            parts.append(f"ZeRO-{self.zero}")
        if self.tp > 1:
            parts.append(f"TP{self.tp}" + ("+SP" if self.sequence_parallel else ""))
        if self.pp > 1:
            parts.append(f"PP{self.pp}" + (f" interleaved x{self.virtual_stages}"
                                           if self.pp_schedule == "interleaved" else ""))
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.n_gpus > self.gpus_per_node:
            parts.append(f"{self.nodes} nodes")
        if self.offload_optimizer:
            parts.append("optimizer offload")
        if self.offload_params:
            parts.append("parameter offload")
        return ", ".join(parts)


@dataclass(frozen=True)
class Setup:
    """A training or inference run of one model, per GPU where it matters."""

    method: str = "full"
    precision: str = "mixed-bf16"
    optimizer: str = "adamw"
    lora_rank: int = 16
    lora_targets: str = "all-linear"
    lora_dropout: bool = True
    adapter_fp32: bool = True  # PEFT upcasts adapters to fp32; torchtune and LitGPT keep bf16
    quant_type: str = "nf4"  # QLoRA 4-bit data type: nf4 or fp4
    double_quant: bool = True
    compute_dtype: str = "bf16"  # QLoRA and inference compute dtype
    micro_batch: int = 1
    seq_len: int = 2048
    grad_accum: int = 1
    recompute: str = "none"
    attention: str = "sdpa"
    loss: str = "standard"  # see LOSSES
    activation_offload: bool = False  # saved activations moved to CPU as forward goes (torchtune)
    optimizer_in_backward: bool = False  # each gradient applied and freed as backward makes it
    compile: bool = False  # torch.compile: pointwise ops fused, cheap ones recomputed
    fp32_grads: bool = True  # mixed precision keeps fp32 gradients (False: the papers' 16 B)
    framework: str = "hf"
    layout: Layout = field(default_factory=Layout)

    @property
    def training(self) -> bool:
        return self.method != "inference"

    @property
    def fused_layers(self) -> bool:
        """Transformer Engine layers (Megatron): activations as Korthikanti et al. count them."""
        return framework_preset(self.framework).fused_layers

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step: micro batch x accumulation x data-parallel replicas."""
        return self.micro_batch * self.grad_accum * self.layout.dp

    @property
    def base_storage(self) -> str:
        """Storage dtype of the frozen base weights (LoRA, QLoRA, inference).

        Mixed precision over a 16-bit checkpoint usually keeps the base 16-bit (HF, PEFT);
        Lightning's bf16-mixed and TRL's fp32 load keep it in fp32.
        """
        if self.precision.startswith("mixed-"):
            if framework_preset(self.framework).mixed_keeps_fp32_base:
                return "fp32"
            return self.precision.removeprefix("mixed-")
        return self.precision

    def but(self, **changes) -> Setup:
        """A copy with some fields changed (layout fields go to the layout)."""
        lay = {k: changes.pop(k) for k in list(changes) if k in _LAYOUT_FIELDS}
        if lay:
            changes["layout"] = replace(self.layout, **lay)
        return replace(self, **changes)


_LAYOUT_FIELDS = frozenset(Layout.__dataclass_fields__)


def check(spec: ModelSpec, setup: Setup) -> None:
    """Raise SetupError for values out of range or contradicting each other."""
    for message in _problems(spec, setup):
        raise SetupError(message)


def _problems(spec: ModelSpec, s: Setup):
    lay = s.layout
    yield from _choices(s)
    if s.micro_batch < 1 or s.seq_len < 1 or s.grad_accum < 1:
        yield "batch, sequence length and gradient accumulation must be at least 1"
    if lay.n_gpus < 1:
        yield "the run needs at least one GPU (--gpus)"
    if lay.tp < 1 or lay.pp < 1 or lay.cp < 1:
        yield "--tp, --pp and --cp must be at least 1"
    elif lay.n_gpus % lay.model_parallel:
        parts = "TP x PP x CP" if lay.cp > 1 else "TP x PP"
        yield f"--gpus {lay.n_gpus} is not a multiple of {parts} = {lay.model_parallel}"
    elif s.seq_len % lay.cp:
        yield f"--cp {lay.cp} does not divide the sequence length {s.seq_len}"
    if lay.tp > 1 and spec.n_heads % lay.tp:
        yield f"--tp {lay.tp} does not divide the {spec.n_heads} attention heads"
    if lay.tp > 1 and not spec.mla and spec.n_kv_heads % lay.tp and lay.tp % spec.n_kv_heads:
        yield f"--tp {lay.tp} and the {spec.n_kv_heads} KV heads cannot be split evenly"
    if lay.pp > spec.n_layers:
        yield f"--pp {lay.pp} is more stages than the model's {spec.n_layers} layers"
    if lay.zero and lay.fsdp:
        yield "choose ZeRO or FSDP, not both"
    if lay.zero >= 2 and lay.pp > 1:
        yield "DeepSpeed's pipeline engine runs with ZeRO stage 0 or 1 only (--pp with --zero 1)"
    if lay.offload_params and not lay.shards_params:
        yield "parameter offload needs ZeRO-3 or FSDP full sharding"
    if lay.sequence_parallel and lay.tp == 1:
        yield "sequence parallelism needs tensor parallelism (--tp > 1)"
    if lay.pp_schedule == "interleaved" and (lay.pp == 1 or lay.virtual_stages < 2):
        yield "the interleaved schedule needs --pp > 1 and at least 2 virtual stages"
    yield from _method_problems(s)


def _choices(s: Setup):
    lay = s.layout
    checks = (
        ("method", s.method, METHODS), ("precision", s.precision, tuple(PRECISIONS) + QUANTIZED),
        ("optimizer", s.optimizer, OPTIMIZERS), ("recompute", s.recompute, RECOMPUTE),
        ("attention", s.attention, ATTENTION),
        ("quantisation type", s.quant_type, ("nf4", "fp4")),
        ("compute dtype", s.compute_dtype, ("bf16", "fp16", "fp32")),
        ("pipeline schedule", lay.pp_schedule, PP_SCHEDULES), ("loss", s.loss, LOSSES),
    )
    for label, value, allowed in checks:
        if value not in allowed:
            yield f"unknown {label} {value!r} (choose from {', '.join(allowed)})"
    try:
        lora_kinds(s.lora_targets)
    except TargetError as err:
        yield str(err)
    if lay.zero not in (0, 1, 2, 3):
        yield f"ZeRO stage {lay.zero} does not exist (0, 1, 2 or 3)"
    if lay.fsdp not in (None, *FSDP_MODES):
        yield f"unknown FSDP mode {lay.fsdp!r} (choose from {', '.join(FSDP_MODES)})"


def _method_problems(s: Setup):
    if s.method == "full" and s.precision in QUANTIZED:
        yield f"full fine-tuning cannot train {s.precision} weights; use LoRA or QLoRA"
    if s.method == "qlora" and s.precision not in QUANTIZED:
        yield (f"QLoRA keeps the base quantised (nf4 or int8), which contradicts "
               f"--precision {s.precision}; use --method lora for a {s.precision} base")
    if s.method == "lora" and s.precision in QUANTIZED:
        yield f"a {s.precision} base is QLoRA: use --method qlora"
    if s.method in ("lora", "qlora") and s.lora_rank < 1:
        yield "the LoRA rank must be at least 1"
    if s.method == "inference":
        if s.precision.startswith("mixed-"):
            yield f"{s.precision} is a training setting; for inference give the weight dtype"
        if s.optimizer != "none":
            yield "inference has no optimizer (--optimizer none)"
        if s.layout.zero or s.layout.fsdp:
            yield "ZeRO and FSDP shard training state; inference uses --tp / --pp"
    if s.training and s.precision not in FROZEN_STORAGE + tuple(PRECISIONS):
        yield f"unknown precision {s.precision!r}"
    yield from _knob_problems(s)


def _knob_problems(s: Setup):
    if not s.training and (s.activation_offload or s.optimizer_in_backward):
        yield "activation offload and optimizer-in-backward are training settings"
    if s.optimizer_in_backward and s.grad_accum > 1:
        yield ("the optimizer steps inside backward, so gradients cannot accumulate: "
               "--optimizer-in-backward needs --grad-accum 1")
    if s.optimizer_in_backward and s.layout.offload_optimizer:
        yield "an offloaded optimizer steps on the CPU, not inside backward"
    if s.activation_offload and s.recompute == "none":
        # torchtune, axolotl and Unsloth offload the checkpointed layer inputs, and refuse it
        # without checkpointing.
        yield "activation offload moves checkpointed layer inputs: it needs --recompute"
