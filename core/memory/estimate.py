"""Per-GPU memory of a run, by component, and the three readings logs record.

Components (docs/design.md): weights, gradients, optimizer, activations, logits,
kv_cache, overhead. Static terms follow EleutherAI's "Transformer Math 101"
and the ZeRO paper's sharding rules ((2 + 2 + K)Ψ / N_d ...); activations
follow Korthikanti et al. (see :mod:`core.memory.activations`); quantised
storage follows Dettmers et al., "QLoRA".

The peak is the larger of two moments: the start of backward (activations and
logits all held, gradients only where a framework keeps them across steps) and
the optimizer step (every gradient, no activations).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.memory import activations as act
from core.memory.frameworks import framework as framework_preset
from core.memory.precision import PAGED, PRECISIONS, frozen_bytes, optimizer_state_bytes
from core.memory.setup import Setup, check
from core.memory.spec import ModelSpec
from core.metrics import GIB

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "logits", "kv_cache", "overhead")
# Allocator and runtime priors (calibration replaces them with what the user's runs show).
RESERVED_FACTOR = 1.10  # caching-allocator fragmentation: 5-10 % (PyTorch reviewers), Megatron 1.05
CUDA_CONTEXT_GIB = 0.75  # context + kernels: 0.3-2 GiB first use (HF anatomy: 1.3 GB on a V100)
NCCL_GIB = 0.5  # communicator buffers when more than one GPU talks
WORKSPACE_GIB = 0.1  # cuBLAS / attention workspaces inside the allocator


@dataclass(frozen=True)
class PeakTerms:
    """The pieces the peak is the larger of, in bytes: what calibration scales."""

    backward: float  # static bytes held at the start of backward (without activations, logits)
    step: float  # bytes at the optimizer step (every gradient, no activations)
    activations: float
    logits: float


@dataclass(frozen=True)
class Estimate:
    """Predicted memory of one GPU, in bytes, with the three readings."""

    breakdown: dict[str, float]
    allocated: float
    reserved: float
    device: float
    phase: str  # "backward" or "optimizer step": when the allocated peak happens
    trainable_params: int
    total_params: int
    terms: PeakTerms = PeakTerms(0.0, 0.0, 0.0, 0.0)
    stage: str = "first"  # pipeline stage reported (the busier of first and last)
    notes: tuple[str, ...] = field(default_factory=tuple)
    paged: float = 0.0  # paged optimizer state: on the device while resident, outside torch

    @property
    def required(self) -> float:
        """Device bytes the run cannot do without: paged state yields to the GPU's need."""
        return self.device - self.paged

    def gib(self) -> dict[str, float]:
        return {k: v / GIB for k, v in self.breakdown.items()}

    def reading(self, counter: str) -> float:
        """Bytes for a counter kind: "allocated", "reserved" or "device"."""
        return {"allocated": self.allocated, "reserved": self.reserved, "device": self.device}[
            counter]


def trainable_params(spec: ModelSpec, setup: Setup) -> int:
    if setup.method == "full":
        return spec.total_params
    if setup.method in ("lora", "qlora"):
        return spec.lora_params(setup.lora_rank, setup.lora_targets)
    return 0


@dataclass(frozen=True)
class _Stage:
    """The share of the model one pipeline stage holds, before TP and data sharding."""

    block_fraction: float
    embedding: bool
    head: bool

    def params(self, spec: ModelSpec) -> float:
        n = spec.block_params * self.block_fraction
        n += spec.embedding_params if self.embedding else 0
        if self.head:  # a tied head on its own pipeline stage is a copy of the embedding
            n += spec.vocab * spec.hidden if spec.tied_embeddings and not self.embedding else (
                spec.head_params)
        return n


def _stages(spec: ModelSpec, setup: Setup) -> dict[str, _Stage]:
    pp = setup.layout.pp
    if pp == 1:
        return {"only": _Stage(1.0, True, True)}
    return {"first": _Stage(1 / pp, True, False), "last": _Stage(1 / pp, False, True)}


def estimate(spec: ModelSpec, setup: Setup) -> Estimate:
    """Predict the per-GPU memory of ``setup`` on ``spec`` (raises SetupError if invalid)."""
    check(spec, setup)
    built = as_built(spec, setup)
    results = [_stage_estimate(built, setup, name, stage)
               for name, stage in _stages(built, setup).items()]
    worst = max(results, key=lambda e: (e.required, e.allocated))  # the stage that must fit
    if built is spec:
        return worst
    copied = (built.total_params - spec.total_params) / 1e9
    note = (f"{framework_preset(setup.framework).title} gives the tied model its own output "
            f"layer: {copied:.2f}B parameters more than the checkpoint holds")
    return replace(worst, notes=(*worst.notes, note))


def model_states(spec: ModelSpec, setup: Setup) -> dict[str, float]:
    """The static part per GPU (first stage): weights, every gradient, optimizer state, bytes.

    The seed article's first sizing step, before activations; the ZeRO paper's
    (2 + 2 + K)Ψ and its sharded forms when ``fp32_grads`` is off.
    """
    check(spec, setup)
    spec = as_built(spec, setup)
    stage = next(iter(_stages(spec, setup).values()))
    frac = stage.params(spec) / spec.total_params
    static = _static(spec, setup, trainable_params(spec, setup) * frac, frac)
    return {k: static[k] for k in ("weights", "gradients", "optimizer")}


def as_built(spec: ModelSpec, setup: Setup) -> ModelSpec:
    """The model as the framework builds it: LitGPT's GPT keeps its own ``lm_head`` beside the
    embedding, so a tied model trains and stores a copy of it (convert_hf_checkpoint copies it)."""
    if not spec.tied_embeddings or not framework_preset(setup.framework).unties_embeddings:
        return spec
    copy = spec.vocab * spec.hidden
    n_params = None if spec.n_params is None else spec.n_params + copy
    return replace(spec, tied_embeddings=False, n_params=n_params)


def _stage_estimate(spec: ModelSpec, setup: Setup, name: str, stage: _Stage) -> Estimate:
    lay = setup.layout
    frac = stage.params(spec) / spec.total_params
    trainable = trainable_params(spec, setup)
    static = _static(spec, setup, trainable * frac, frac)
    dynamic = _dynamic(spec, setup, stage)
    paged = static.pop("paged")
    cached = dynamic.pop("cached", 0.0)
    overhead = WORKSPACE_GIB * GIB + static.pop("buckets") + _zero_buckets(spec, setup)
    weights, step_weights = static["weights"], static["weights"]
    if act.fp32_stream(setup):
        # HF mixed precision: the fp32 parameters are the master (counted as optimizer); the
        # 16-bit copies are autocast's, of matmul weights only, and die with backward.
        weights *= _autocast_copied(spec) / spec.total_params
        step_weights = 0.0
    backward = weights + static["optimizer"] + static["persistent_grads"]
    backward += dynamic["activations"] + dynamic["logits"] + dynamic["kv_cache"] + overhead
    step_grads = static["gradients"] + _tied_gradient(spec, setup) / lay.tp
    step = step_weights + static["optimizer"] + step_grads + overhead
    at_backward = backward >= step or not setup.training
    grads = static["persistent_grads"] if at_backward else step_grads
    breakdown = {
        "weights": weights if at_backward else step_weights,
        "gradients": grads,
        "optimizer": static["optimizer"],
        "activations": dynamic["activations"] if at_backward else 0.0,
        "logits": dynamic["logits"] if at_backward else 0.0,
        "kv_cache": dynamic["kv_cache"],
        "overhead": overhead,
    }
    allocated = sum(breakdown.values())
    terms = PeakTerms(backward - dynamic["activations"] - dynamic["logits"], step,
                      dynamic["activations"], dynamic["logits"])
    # The caching allocator keeps the loss's freed blocks while the rebuilt layer allocates
    # its own: reserved memory holds both (answerai's and torchtitan's reserved peaks).
    reserved = max(allocated, backward + cached) * RESERVED_FACTOR
    device = reserved + (CUDA_CONTEXT_GIB + (NCCL_GIB if lay.n_gpus > 1 else 0.0)) * GIB + paged
    return Estimate(
        breakdown=breakdown, allocated=allocated, reserved=reserved, device=device,
        phase="backward" if at_backward and setup.training else (
            "optimizer step" if setup.training else "generation"),
        trainable_params=trainable, total_params=spec.total_params, terms=terms, stage=name,
        notes=tuple(_notes(spec, setup, static, breakdown)), paged=paged,
    )


def _static(spec: ModelSpec, setup: Setup, trainable: float, frac: float) -> dict[str, float]:
    """Weights, gradients and optimizer state on one GPU, after TP/PP and data sharding."""
    lay = setup.layout
    mp = lay.tp
    dp_shards = lay.param_shards
    weights = _weight_bytes(spec, setup, frac) / mp
    if setup.method != "full":  # adapters train; the base is frozen
        weights += trainable * _adapter_bytes(setup) / mp
    p = _precision(setup)
    grad_bytes = _grad_bytes(setup)
    grads = trainable * grad_bytes / mp
    if setup.optimizer_in_backward:  # each gradient is applied and freed as it is made
        grads = min(grads, spec.largest_tensor_params * grad_bytes / mp)
    moments = trainable * optimizer_state_bytes(setup.optimizer, p.state) / mp
    if setup.optimizer == "adafactor":
        moments += _adafactor_bytes(spec, setup) * frac / mp
    optimizer = trainable * p.master / mp + moments
    if lay.shards_params and (lay.shard_group > 1 or lay.offload_params):
        weights = _sharded_weights(spec, setup, weights, frac, _gathered_bytes(setup, p))
    shards = dp_shards if lay.fsdp == "hybrid" else lay.shard_group
    if lay.shards_grads and shards > 1:
        grads /= shards
    if lay.shards_optimizer and shards > 1:
        optimizer, moments = optimizer / shards, moments / shards
    if lay.offload_optimizer:  # ZeRO-Offload keeps gradients and states on the CPU
        optimizer, grads, moments = 0.0, 0.0, 0.0
    if lay.offload_params:  # FSDP's CPUOffload moves gradients with the parameters
        grads = 0.0
    paged = moments if setup.optimizer in PAGED else 0.0
    persistent = grads if _grads_persist(setup) else 0.0
    buckets = grads if _ddp_buckets(setup) else 0.0
    return {"weights": weights, "gradients": grads, "optimizer": optimizer - paged,
            "persistent_grads": persistent, "buckets": buckets, "paged": paged}


def _gathered_bytes(setup: Setup, p) -> float | None:
    """Bytes per parameter of a module gathered whole: its 16-bit weights and gradients.

    None: the weights as stored (a frozen or quantised base), no gradients.
    FSDP2 in torchtitan reduces in fp32, so one layer's gradients are fp32.
    """
    if setup.method != "full":
        return None
    grads = 4.0 if framework_preset(setup.framework).master_only else p.grad
    return 2.0 + grads if p.master else p.weight + p.grad


def _sharded_weights(spec: ModelSpec, setup: Setup, local: float, frac: float,
                     per_param: float | None) -> float:
    """Weights on one GPU under ZeRO-3 / FSDP: its shard plus the module being gathered.

    ``local`` is this GPU's share before data sharding. DeepSpeed's estimator
    (largest_layer_memory + 18Ψ/N): the biggest module's parameters, and when
    it trains their 16-bit gradients, gathered whole into buffers of their own
    beside the shard, in their stored dtype (a quantised base stays packed).
    """
    if per_param is None:
        per_param = local * setup.layout.tp / (spec.total_params * frac)
    layer = per_param * spec.largest_layer_params / setup.layout.tp
    shard = 0.0 if setup.layout.offload_params else local / setup.layout.param_shards
    return shard + layer


def _precision(setup: Setup):
    if setup.method == "full":
        return PRECISIONS[setup.precision]
    if not setup.training:
        return PRECISIONS["bf16"]
    # Adapters: PEFT upcasts them to fp32 over any 16-bit base (its autocast_adapter_dtype
    # default, pure 16-bit runs included); torchtune, LitGPT (and TRL's QLoRA) keep bf16.
    return PRECISIONS["fp32" if setup.adapter_fp32 else "bf16"]


def _adapter_bytes(setup: Setup) -> float:
    return _precision(setup).weight


def _weight_bytes(spec: ModelSpec, setup: Setup, frac: float) -> float:
    """The model's own weights on this stage: compute copy, frozen or quantised."""
    n = spec.total_params * frac
    if setup.method == "full":
        p = PRECISIONS[setup.precision]
        if p.master and framework_preset(setup.framework).master_only and (
                setup.layout.shards_params):
            return 0.0  # FSDP2: 16-bit weights exist only for the layer being computed
        return n * p.weight
    storage = setup.base_storage
    if storage not in ("nf4", "int8"):
        return n * frozen_bytes(storage)
    # bitsandbytes quantises the block linears; embeddings, head and norms stay 16-bit. So do
    # the routed experts of MoE models in transformers 5, which are fused 3-D parameters
    # rather than nn.Linear modules (transformers' bitsandbytes integration swaps only those).
    routed = spec.moe_layers * spec.n_experts * spec.mlp_params(spec.moe_intermediate)
    linear = (spec.linear_params - routed * spec._block_scale) * frac
    compute = 4.0 if setup.compute_dtype == "fp32" else 2.0
    quant = frozen_bytes(storage, setup.quant_type, setup.double_quant)
    weights = linear * quant + (n - linear) * compute
    if frac == 1.0:  # the output layer as the framework holds it: untied, quantised too
        held = quant if framework_preset(setup.framework).quantizes_head else compute
        weights += spec.head_params * (held - compute)
    return weights


def _dequantized_head(spec: ModelSpec, setup: Setup) -> float:
    """A quantised output layer's weight, dequantised whole for each chunk's matmul and for
    its backward: in the dtype it was quantised from, then (while that is alive) cast to the
    compute dtype (bitsandbytes' ``dequantize_4bit(B, state).to(A.dtype)``)."""
    preset = framework_preset(setup.framework)
    if setup.precision != "nf4" or not preset.quantizes_head:
        return 0.0
    compute = 4.0 if setup.compute_dtype == "fp32" else 2.0
    copies = 2 if preset.nf4_fp16_state and setup.compute_dtype != "fp16" else 1
    return spec.head_params * compute * copies / setup.layout.tp


def _chunked_head_gradient(spec: ModelSpec, setup: Setup) -> float:
    """The loss's other moment when a trained output layer runs once per loss chunk
    (torchtune's ``chunked_output``, modules/transformer.py at 30b8519e8): every chunk's loss
    backward runs first (higher sequence numbers), leaving each chunk's 16-bit logit gradient,
    and then autograd sums the layer's gradient over the chunks' matmuls: the running sum and
    the newest term beside those gradients. When the optimizer steps in backward the running
    sum is the one gradient already held (see :func:`_static`)."""
    if (setup.method != "full" or setup.loss != "chunked"
            or framework_preset(setup.framework).loss_chunk_tokens):
        return 0.0
    grad = _grad_bytes(setup)
    copies = 1 if setup.optimizer_in_backward else 2
    logit_grads = act.local_tokens(setup) * spec.vocab * act.element_bytes(setup)
    return (logit_grads + copies * spec.vocab * spec.hidden * grad) / setup.layout.tp


def _autocast_copied(spec: ModelSpec) -> float:
    """Parameters autocast makes 16-bit copies of: every matmul weight, the output layer's
    included (a tied one is the embedding), but not embedding lookups, and not the routed
    experts of transformers' MoE kernels (grouped_mm is not autocast: they run in fp32)."""
    lookups = 0 if spec.tied_embeddings else spec.embedding_params
    routed = spec.moe_layers * spec.n_experts * spec.mlp_params(spec.moe_intermediate)
    return spec.total_params - lookups - routed * spec._block_scale


def _tied_gradient(spec: ModelSpec, setup: Setup) -> float:
    """A tied output layer's gradient, held by autograd until the embedding's is added to it
    at the very end of backward (when every other gradient exists)."""
    if setup.method != "full" or not spec.tied_embeddings:
        return 0.0
    return spec.vocab * spec.hidden * _grad_bytes(setup)


def _grad_bytes(setup: Setup) -> float:
    """Bytes of one trained parameter's gradient: fp32 beside a master copy when asked."""
    p = _precision(setup)
    return 4.0 if setup.fp32_grads and p.master else p.grad


def _adafactor_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Factored second moments: one row and one column accumulator per matrix (fp32)."""
    if setup.method != "full":
        return 0.0
    per = sum((m.d_in + m.d_out) * m.count for m in spec.matrices)
    return 4.0 * per


def _grads_persist(setup: Setup) -> bool:
    """Gradients held at the start of backward: accumulation, or a framework's own buffers."""
    if setup.optimizer_in_backward:
        return True  # the one gradient being applied (see _static)
    return (setup.grad_accum > 1 or framework_preset(setup.framework).persistent_grads
            or setup.layout.zero > 0)


def _ddp_buckets(setup: Setup) -> bool:
    """PyTorch DDP copies gradients into all-reduce buckets (gradient_as_bucket_view=False)."""
    lay = setup.layout
    return (setup.training and lay.dp > 1 and not lay.zero and not lay.fsdp
            and not framework_preset(setup.framework).persistent_grads)


def _zero_buckets(spec: ModelSpec, setup: Setup) -> float:
    """DeepSpeed's reduce bucket of 16-bit gradients, at any ZeRO stage (5e8 elements unless
    configured; Hugging Face's "auto" sets hidden_size squared)."""
    preset = framework_preset(setup.framework)
    if not setup.training or not (setup.layout.zero or preset.zero_bucket):
        return 0.0
    bucket = preset.zero_bucket or spec.hidden**2
    return 2.0 * bucket


def _dynamic(spec: ModelSpec, setup: Setup, stage: _Stage) -> dict[str, float]:
    """Activations, logits and KV cache of one GPU on this stage."""
    if not setup.training:
        logits = act.logits_bytes(spec, setup) + _dequantized_head(spec, setup) if stage.head \
            else 0.0
        # a layer's workspace is gone by the time the head scores: the larger of the two
        return {"activations": max(0.0, act.inference_bytes(spec, setup) - logits),
                "logits": logits, "kv_cache": kv_cache_bytes(spec, setup)}
    activations = act.block_bytes(spec, setup) + act.expert_adapter_bytes(spec, setup)
    activations += act.held_quantized_inputs(spec, setup)
    if stage.embedding or stage.head:
        activations += act.edge_bytes(spec, setup)
    logits = 0.0
    if stage.head:
        logits = act.logits_bytes(spec, setup) + _dequantized_head(spec, setup)
        logits = max(logits, _chunked_head_gradient(spec, setup))
    # Under full recompute the rebuilt layer comes after the loss's gradients are freed: the
    # allocated peak holds the larger of the two, not both; the allocator still holds both.
    cached = min(act.rebuilt_layer_bytes(spec, setup), logits)
    return {"activations": activations - cached, "logits": logits, "kv_cache": 0.0,
            "cached": cached}


def kv_cache_bytes(spec: ModelSpec, setup: Setup) -> float:
    """2 (K and V) x layers x batch x context x KV heads x head dim x bytes.

    DeepSeek's latent attention caches the compressed KV (kv_lora_rank + rope
    dims per token and layer), as serving engines do.
    """
    lay = setup.layout
    e = 4.0 if setup.compute_dtype == "fp32" else 2.0
    tokens = setup.micro_batch * setup.seq_len
    if spec.family in act.ENCODER_ONLY:
        return 0.0  # an encoder scores the whole input at once: nothing to cache
    # Encoder-decoders cache the source's keys and values in each decoder block only.
    layers = (spec.decoder_layers or spec.n_layers) / lay.pp
    if spec.mla:
        return layers * tokens * (spec.kv_lora_rank + spec.rope_head_dim) * e
    heads = spec.n_kv_heads / lay.tp if spec.n_kv_heads >= lay.tp else 1
    return 2 * layers * tokens * heads * spec.head_dim * e


def _notes(spec: ModelSpec, setup: Setup, static: dict, breakdown: dict) -> list[str]:
    notes = []
    if setup.training and breakdown["gradients"] < static["gradients"]:
        notes.append("peak at the start of backward: gradients appear as activations are freed")
    if setup.optimizer in PAGED:
        notes.append("the paged optimizer's moments live in unified memory outside PyTorch's "
                     "counters and move to CPU memory when the GPU runs short")
    if setup.optimizer_in_backward:
        notes.append("optimizer steps inside backward: one gradient at a time is held")
    if setup.layout.offload_optimizer:
        notes.append("optimizer state and fp32 gradients live in CPU memory")
    return notes
