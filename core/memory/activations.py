"""Activation memory: what autograd keeps between forward and backward, per GPU.

The fused profile (Megatron with Transformer Engine) is Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models" (2022), table 2,
generalised to GQA and gated MLPs: ``sbh(34 + 5as/h)`` bytes per layer for GPT.
The eager profile is the same inventory for PyTorch modules as Hugging Face
writes them, which keep more: RMSNorm upcasts to fp32 (4h for its input, 2h for
the normalised value, 2h for its output), SwiGLU keeps gate, SiLU, up and their
product (4 x 2f), eager attention keeps fp32 softmax and its bf16 copy (6as).
Frozen weights (LoRA) need no saved input, so LoRA keeps less than full
fine-tuning. The counts were checked tensor by tensor with saved-tensor hooks
on real models (tests/core/test_activations.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.memory.frameworks import framework as framework_preset
from core.memory.precision import PRECISIONS
from core.memory.setup import Setup
from core.memory.spec import ModelSpec

# Elements saved per MLP-width element by the activation (input, output, composites).
_ACT_SAVES = {"silu": 1, "gelu": 1, "relu": 1, "gelu_new": 4}
# Bytes per logit at the start of backward, besides the 16-bit logits themselves:
LOGITS_EAGER = 12  # fp32 log-softmax saved, then its fp32 gradient and the logits' gradient
LOGITS_TE = 4.0  # in all: Megatron's vocab-parallel CE keeps one fp32 softmax, grad in place
LOGITS_CHUNKED = 4.0  # in all: one fp32 (torchtune) or two bf16 (LitGPT) saved per logit...
LOSS_CHUNKS = 8  # ...and one chunk of 8 upcast at a time (torchtune's default)
# torchtune's OffloadActivations keeps the layer being computed and the one being copied.
OFFLOAD_RESIDENT_LAYERS = 2


@dataclass(frozen=True)
class PerToken:
    """Bytes one token keeps in one layer: replicated under TP, split by TP, per key."""

    replicated: float
    split: float
    per_key: float = 0.0  # eager attention scores: times the sequence length

    def total(self, seq: int, tp: int = 1, sp: bool = False) -> float:
        rep = self.replicated / (tp if sp else 1)
        return rep + (self.split + self.per_key * seq) / tp


def element_bytes(setup: Setup) -> float:
    if setup.method == "qlora" or setup.method == "inference":
        return 4.0 if setup.compute_dtype == "fp32" else 2.0
    if setup.precision in PRECISIONS:
        return PRECISIONS[setup.precision].activation
    return 2.0


def layer_per_token(spec: ModelSpec, setup: Setup, moe: bool) -> PerToken:
    """Saved bytes per token in one transformer block (no recompute, or per-op)."""
    e = element_bytes(setup)
    if setup.recompute == "op":
        return _op_checkpointed(spec, setup, e, moe)
    full = setup.method == "full"
    h, qd, kvd = spec.hidden, spec.n_heads * (spec.v_head_dim or spec.head_dim), spec.kv_dim
    width = spec.active_intermediate if moe else spec.intermediate
    norm_in = (e if spec.norm == "layer" else 4.0) * h  # HF's RMSNorm upcasts its input
    attn_in_saved, mlp_in_saved = _inputs_saved(setup)
    if setup.fused_layers or setup.compile:  # one fused norm kernel saves its 16-bit input
        norm_in = e * h
    rep = spec.norms_per_layer / 2 * (2 * norm_in + e * h * (attn_in_saved + mlp_in_saved))
    if full and not (setup.fused_layers or setup.compile) and spec.norm != "layer":
        rep += spec.norms_per_layer * e * h  # normalised value kept for the weight's gradient
    rep += 2 * h if spec.dropout else 0.0  # hidden dropout masks, one byte each
    split = _attention(spec, setup, e, qd, kvd, attn_in_saved)
    split += _mlp(spec, setup, e, width, mlp_in_saved)
    if moe:
        split += e * h * spec.n_active_experts + 4 * spec.n_experts  # dispatched copies, router
    split += _lora_inputs(spec, setup, e)
    per_key = _scores(spec, setup, e)
    return PerToken(rep, split, per_key)


def _op_checkpointed(spec: ModelSpec, setup: Setup, e: float, moe: bool) -> PerToken:
    """torchtitan's per-op selective checkpointing of a Llama block.

    It keeps the outputs of compute ops except every second matmul: the block
    input, wq, wv, the attention output and its logsumexp, w1 and w2; wk, wo,
    w3 and every pointwise op (norms, RoPE, SiLU, the product) are recomputed.
    """
    width = spec.active_intermediate if moe else spec.intermediate
    qd, kvd = spec.n_heads * spec.head_dim, spec.kv_dim
    split = e * (2 * qd + kvd + width) + 4.0 * spec.n_heads
    return PerToken(replicated=2 * e * spec.hidden, split=split)


def _inputs_saved(setup: Setup) -> tuple[bool, bool]:
    """Whether the inputs of the attention and MLP linears are kept for backward.

    A trainable weight needs its input; a frozen one does not (LoRA adapters
    keep their own copies, see :func:`_lora_inputs`), except that
    bitsandbytes' quantised matmuls save their input whatever is frozen. Its
    4-bit matmul stopped in 0.43.2 (July 2024), as torchao's NF4 linear never
    did, but most published QLoRA peaks predate it: only frameworks known to
    run without it (torchtune) drop the term, so the figure errs high.
    """
    saved = setup.method == "full" or (
        setup.method == "qlora" and (setup.precision == "int8"
                                     or framework_preset(setup.framework).nf4_saves_input))
    return saved, saved


def _attention(spec: ModelSpec, setup: Setup, e: float, qd: int, kvd: int,
               out_proj_input: bool) -> float:
    if spec.mla:  # compressed KV is expanded per head before attention
        kvd = spec.n_heads * spec.head_dim
    eager = setup.attention == "eager"
    k_and_v = 2 * qd if eager and not setup.fused_layers else 2 * kvd  # repeat_kv copies
    # Attention output: flash keeps it for its backward; otherwise only a trainable o_proj.
    out = e * qd if not eager or out_proj_input or setup.fused_layers else 0.0
    lse = 0.0 if eager else 4.0 * spec.n_heads
    return e * (qd + k_and_v) + out + lse


def _scores(spec: ModelSpec, setup: Setup, e: float) -> float:
    """Bytes per token per key position: the s x s attention matrices eager attention keeps."""
    if setup.attention != "eager" or setup.recompute in ("selective", "op", "full"):
        return 0.0
    a = spec.n_heads
    if setup.fused_layers:  # Korthikanti: softmax output, dropout mask and output (5as)
        return a * (2 * e + 1) if spec.dropout else a * e
    # Llama-style eager attention takes the softmax in fp32 and keeps a compute-dtype copy;
    # GPT-2-era models (LayerNorm) keep one softmax in the compute dtype.
    kept = e if spec.norm == "layer" else 4.0 + e
    return a * (kept + (e + 1 if spec.dropout else 0.0))


def _mlp(spec: ModelSpec, setup: Setup, e: float, width: int, down_input_saved: bool) -> float:
    if setup.compile:  # the min-cut partitioner keeps the matmul outputs, recomputes the rest
        return e * width * (2 if spec.gated_mlp else 1)
    if spec.gated_mlp:  # gate output, activation output, up output; product for down_proj
        return e * width * (3 + down_input_saved)
    # transformers writes GPT-2's tanh GELU as five ops; other frameworks call a fused one.
    saves = _ACT_SAVES.get(spec.activation, 1) if framework_preset(setup.framework).hf_modules else 1
    return e * width * (saves + down_input_saved)


def _lora_inputs(spec: ModelSpec, setup: Setup, e: float) -> float:
    """What adapters keep for backward beyond the frozen base, per token and layer.

    PEFT upcasts adapters to fp32 and casts each matrix's input to them: under
    autocast lora_A keeps a 16-bit copy, otherwise the fp32 cast itself, one per
    adapted matrix. Adapters in the compute dtype (torchtune, LitGPT) keep the
    input itself, once per distinct input (q, k and v read the same one). Each
    matrix's dropout adds its own copy and a one-byte mask; lora_A's output is
    kept for lora_B. Checked against saved-tensor hooks (test_activations.py).
    """
    if setup.method not in ("lora", "qlora"):
        return 0.0
    matrices = spec.lora_matrices(setup.lora_targets)
    if setup.adapter_fp32:
        autocast = setup.method == "qlora" or setup.precision.startswith("mixed-")
        per = (2.0 if autocast else 4.0) + (1.0 if setup.lora_dropout else 0.0)
        inputs = sum(per * m.d_in * m.count * _routed(spec, m.name) for m in matrices)
    elif setup.lora_dropout:
        inputs = sum((e + 1.0) * m.d_in * m.count * _routed(spec, m.name) for m in matrices)
    else:
        distinct = {_input_of(m.name): m.d_in * m.count * _routed(spec, m.name) for m in matrices}
        inputs = e * sum(distinct.values())
    rank_out = (4.0 if setup.adapter_fp32 else e) * setup.lora_rank
    outputs = sum(rank_out * m.count * _routed(spec, m.name) for m in matrices)
    return (inputs + outputs) / max(1, spec.n_layers)


_SHARED_INPUT = {"k_proj": "q_proj", "v_proj": "q_proj", "kv_a_proj": "q_proj",
                 "q_a_proj": "q_proj", "up_proj": "gate_proj"}


def _input_of(name: str) -> str:
    """Matrices that read the same tensor share one key (q, k, v; gate and up)."""
    prefix, _, base = name.rpartition(".")
    base = base.removeprefix("cross_")
    return f"{prefix}.{'cross_' if 'cross_' in name else ''}{_SHARED_INPUT.get(base, base)}"


def _routed(spec: ModelSpec, name: str) -> float:
    """Share of tokens a matrix sees: a routed expert gets active / total of them."""
    if name.startswith("experts.") and spec.n_experts:
        return spec.n_active_experts / spec.n_experts
    return 1.0


def block_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Activation bytes of all transformer blocks on the busiest GPU (first pipeline stage)."""
    lay = setup.layout
    tokens = local_tokens(setup)
    s, tp, sp = setup.seq_len // lay.cp, lay.tp, lay.sequence_parallel
    dense = layer_per_token(spec, setup, moe=False).total(s, tp, sp)
    moe = layer_per_token(spec, setup, moe=True).total(s, tp, sp) if spec.is_moe else 0.0
    n_moe = spec.moe_layers
    per_layer = [dense] * (spec.n_layers - n_moe) + [moe] * n_moe
    layers = spec.n_layers / lay.pp
    if setup.activation_offload:  # the rest wait in CPU memory
        layers = min(layers, OFFLOAD_RESIDENT_LAYERS)
    if setup.recompute == "full":
        kept = element_bytes(setup) * spec.hidden / (tp if sp else 1)
        stored = kept * layers * _in_flight(setup)
        return tokens * (stored + max(per_layer))  # one layer is rebuilt during backward
    mean = sum(per_layer) / len(per_layer)
    return tokens * mean * layers * _in_flight(setup)


def local_tokens(setup: Setup) -> float:
    """Tokens of one micro batch on one GPU: context parallelism splits the sequence."""
    return setup.micro_batch * setup.seq_len / setup.layout.cp


def _in_flight(setup: Setup) -> float:
    """Micro-batches whose activations the first pipeline stage holds at once.

    1F1B keeps PP micro-batches in flight (fewer if the step has fewer); the
    interleaved schedule adds 1 + (p - 1) / (p v) (Megatron-LM's
    theoretical_memory_usage.py).
    """
    lay = setup.layout
    if lay.pp == 1:
        return 1.0
    if lay.pp_schedule == "interleaved":
        return lay.pp * (1 + (lay.pp - 1) / (lay.pp * lay.virtual_stages))
    return float(min(lay.pp, setup.grad_accum))


def edge_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Embedding output, final norm and LM-head input, on the stage that holds them."""
    e = element_bytes(setup)
    return local_tokens(setup) * (8 + (4.0 + 3 * e) * spec.hidden) / setup.layout.tp


def logits_bytes(spec: ModelSpec, setup: Setup) -> float:
    """The output layer and cross-entropy: b x s x vocab, large for 128k+ vocabularies.

    Hugging Face models keep the bf16 logits and an fp32 log-softmax, and the
    loss's backward adds two fp32 gradients while every activation is still
    held (14 bytes per logit at the peak); Megatron's fused cross-entropy keeps
    about 6. A chunked loss keeps the 16-bit logits and upcasts one chunk at a
    time; a fused one (Liger, Cut Cross-Entropy) never makes the tensor.
    """
    e = element_bytes(setup)
    tp = setup.layout.tp
    if setup.method == "inference":
        return setup.micro_batch * spec.vocab * (e + 4) / tp  # only the last position
    if setup.loss == "fused":
        return 0.0
    if setup.loss == "chunked" and setup.compile:  # the compiled chunk keeps its 16-bit input
        per_logit = e + (e + LOGITS_EAGER) / LOSS_CHUNKS  # and recomputes the softmax
    elif setup.loss == "chunked":
        per_logit = LOGITS_CHUNKED + (e + LOGITS_EAGER) / LOSS_CHUNKS
    else:
        per_logit = LOGITS_TE if setup.fused_layers else e + LOGITS_EAGER
    return local_tokens(setup) * spec.vocab * per_logit / tp


def inference_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Transient workspace of one layer during prefill (nothing is kept for backward)."""
    e = element_bytes(setup)
    tokens = setup.micro_batch * setup.seq_len
    width = spec.active_intermediate if spec.is_moe else spec.intermediate
    mlp = (3 if spec.gated_mlp else 2) * e * width
    scores = 0.0
    if setup.attention == "eager":
        scores = spec.n_heads * setup.seq_len * (2 * e + 4)
    return tokens * (4 * e * spec.hidden + max(mlp, scores)) / setup.layout.tp
