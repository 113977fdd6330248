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
# Bytes per logit at the start of backward. Hugging Face's loss upcasts the logits and keeps
# the fp32 log-softmax; the 16-bit logits die with the model output before backward (the
# Trainer keeps only the loss), and backward adds the NLL gradient and the log-softmax
# gradient, both fp32: 12 bytes whatever the compute dtype (simulated with MemTracker).
LOGITS_EAGER = 12
LOGITS_TE = 4.0  # Megatron's vocab-parallel CE keeps one fp32 softmax, gradient in place
# torchtune's CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py, 30b8519e8 and
# later) upcasts one of 8 chunks at a time, while the recipe holds the model's 16-bit chunks
# until the loss returns (`del logits` after it). Eager, each chunk's log-softmax keeps its
# fp32 output, so the end of forward holds the 16-bit chunks, every fp32 log-softmax and the
# last chunk's fp32 upcast (more than backward's first chunk adds later). Compiled
# (training.compile_loss compiles the per-chunk upcast + cross-entropy), inductor keeps the
# 16-bit chunk itself and its backward writes only the chunk's 16-bit gradient (saved-tensor
# hooks and inductor's output code, torch 2.13).
LOGITS_CHUNKED = 4.0
LOSS_CHUNKS = 8
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


def autocast(setup: Setup) -> bool:
    """CUDA autocast is on: mixed-precision training, and QLoRA's compute dtype where the
    framework steps it under autocast (HF's Trainer does; Fabric's bitsandbytes plugin and
    torchtune only set the default dtype)."""
    if setup.method == "qlora":
        return framework_preset(setup.framework).quantized_autocast
    return setup.training and setup.precision.startswith("mixed-")


def fp32_stream(setup: Setup) -> bool:
    """Autocast over fp32 parameters (Hugging Face's mixed precision for full fine-tuning).

    The embeddings stay fp32, so the residual stream and every norm's output
    are fp32, and each linear casts its own 16-bit copy of its input (autocast
    caches weight casts, not activation casts). Fused frameworks keep 16-bit
    parameters beside an fp32 master and have none of this.
    """
    preset = framework_preset(setup.framework)
    return (setup.method == "full" and autocast(setup) and not preset.fused_layers
            and not preset.master_only and preset.zero_bucket is None and not setup.layout.zero)


def layer_per_token(spec: ModelSpec, setup: Setup, moe: bool) -> PerToken:
    """Saved bytes per token in one transformer block (no recompute, or per-op)."""
    e = element_bytes(setup)
    if setup.recompute == "op":
        return _op_checkpointed(spec, e, moe)
    full = setup.method == "full"
    h, qd, kvd = spec.hidden, spec.n_heads * (spec.v_head_dim or spec.head_dim), spec.kv_dim
    width = spec.active_intermediate if moe else spec.intermediate
    # HF's RMSNorm upcasts its input; CUDA autocast runs LayerNorm in fp32 on an fp32 copy.
    norm_in = (e if spec.norm == "layer" and not autocast(setup) else 4.0) * h
    attn_in_saved, mlp_in_saved = _inputs_saved(setup)
    attn_casts, mlp_casts = _input_casts(spec) if fp32_stream(setup) else (1, 1)
    fused_norm = setup.fused_layers or setup.compile  # one kernel saves its 16-bit input
    if fused_norm:
        norm_in = e * h
    rep = spec.norms_per_layer / 2 * (2 * norm_in + e * h * (attn_in_saved * attn_casts
                                                           + mlp_in_saved * mlp_casts))
    if full and not fused_norm and spec.norm != "layer":
        # normalised value kept for the weight's gradient (fp32 when the stream is)
        rep += spec.norms_per_layer * (4.0 if fp32_stream(setup) else e) * h
    if spec.family in _T5 and not fp32_stream(setup):
        rep += spec.norms_per_layer * e * h  # T5's norm also keeps its 16-bit input
    rep += 2 * h if spec.dropout else 0.0  # hidden dropout masks, one byte each
    split = _attention(spec, setup, e, qd, kvd, attn_in_saved)
    split += _mlp(spec, setup, e, width, mlp_in_saved)
    if moe:
        split += e * h * spec.n_active_experts + 4 * spec.n_experts  # dispatched copies, router
    split += _lora_inputs(spec, setup, e)
    per_key = _scores(spec, setup, e) + _bias_per_key(spec, setup, e, decoder=False)
    return PerToken(rep, split, per_key)


# Gemma 2 caps attention scores and logits with tanh, which transformers runs only in eager
# attention (it refuses SDPA for the family).
_SOFTCAP = ("gemma2",)


def eager_attention(spec: ModelSpec, setup: Setup) -> bool:
    """Whether the attention materialises its scores: asked for, or the family's only path."""
    return setup.attention == "eager" or spec.family in _SOFTCAP


def _op_checkpointed(spec: ModelSpec, e: float, moe: bool) -> PerToken:
    """torchtitan's per-op selective checkpointing of a Llama block.

    It keeps the outputs of compute ops except every second matmul: the block
    input, wq, wv, the attention output and its logsumexp, w1 and w2; wk, wo,
    w3 and every pointwise op (norms, RoPE, SiLU, the product) are recomputed.
    """
    width = spec.active_intermediate if moe else spec.intermediate
    qd, kvd = spec.n_heads * spec.head_dim, spec.kv_dim
    split = e * (2 * qd + kvd + width) + 4.0 * spec.n_heads
    return PerToken(replicated=2 * e * spec.hidden, split=split)


def _input_casts(spec: ModelSpec) -> tuple[int, int]:
    """How many linears read the attention's and the MLP's normed input, each casting it."""
    attn = 1 if spec.fused_qkv else (2 if spec.mla else 3)
    mlp = 2 if spec.gated_mlp and not spec.fused_gate_up else 1
    return attn, mlp


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
    eager = eager_attention(spec, setup)
    rebuilt = setup.recompute == "selective" and not setup.fused_layers  # the core is recomputed
    # eager attention keeps repeat_kv's copies, unless selective recompute rebuilds them
    k_and_v = 2 * qd if eager and not setup.fused_layers and not rebuilt else 2 * kvd
    # Attention output: flash keeps it for its backward (unless selective recompute rebuilds
    # the attention core); otherwise only a trainable o_proj keeps it.
    core_kept = not eager and not rebuilt
    out = e * qd if core_kept or out_proj_input or setup.fused_layers else 0.0
    lse = 4.0 * spec.n_heads if core_kept else 0.0
    # A fused projection with rotary embeddings (Phi-3): q and k are rotated copies, and v, a
    # view, keeps the whole fused output alive.
    fused_rope = e * (qd + spec.kv_dim) if spec.fused_qkv and not spec.positions else 0.0
    return e * (qd + k_and_v) + out + lse + fused_rope + _qk_norm(spec, setup, e)


def _qk_norm(spec: ModelSpec, setup: Setup, e: float) -> float:
    """RMSNorm on q and k keeps their fp32 upcast, and the normalised value for its weight."""
    if not spec.qk_norm:
        return 0.0
    width = spec.q_dim + spec.kv_dim
    return 4.0 * width + (e * width if setup.method == "full" else 0.0)


# T5: relative position bias, a norm that keeps its input, dropout inside the MLP, and
# decoder blocks with cross-attention.
_T5 = ("t5", "mt5")


def _bias_per_key(spec: ModelSpec, setup: Setup, e: float, decoder: bool) -> float:
    """T5 under SDPA: each self-attention makes its own contiguous copy of the position bias
    as the attention mask (a decoder one through the causal mask, whose bool it keeps too)."""
    if spec.family not in _T5 or setup.attention == "eager":
        return 0.0
    return spec.n_heads * e + (1.0 if decoder else 0.0)


def cross_attention(spec: ModelSpec, setup: Setup) -> float:
    """Bytes per token a decoder block's cross-attention adds: its norm, its input, q, k and
    v over the source (as long as the target here), the output, the log-sum-exp."""
    if not spec.decoder_layers:
        return 0.0
    e = element_bytes(setup)
    h, qd = spec.hidden, spec.n_heads * spec.head_dim
    norm = (4.0 if fp32_stream(setup) else e) * h * 2 if spec.family in _T5 else 4.0 * h
    if setup.method == "full" and not fp32_stream(setup):
        norm += e * h  # the normalised value for the weight's gradient
    q_input = e * h if _inputs_saved(setup)[0] else 0.0
    dropout = h if spec.dropout else 0.0
    return 4.0 * h + norm + q_input + _attention(spec, setup, e, qd, spec.kv_dim, True) + dropout


def _scores(spec: ModelSpec, setup: Setup, e: float) -> float:
    """Bytes per token per key position: the s x s attention matrices eager attention keeps."""
    if not eager_attention(spec, setup) or setup.recompute in ("selective", "op", "full"):
        return 0.0
    a = spec.n_heads
    if setup.fused_layers:  # Korthikanti: softmax output, dropout mask and output (5as)
        return a * (2 * e + 1) if spec.dropout else a * e
    # Llama-style eager attention takes the softmax in fp32 (as CUDA autocast does GPT-2's);
    # the product with V keeps a compute-dtype copy (after dropout, beside its mask).
    if spec.norm != "layer" or autocast(setup):
        softcap = e if spec.family in _SOFTCAP else 0.0  # tanh keeps its output
        return a * (4.0 + e + softcap + (1.0 if spec.dropout else 0.0))
    # GPT-2-era models outside autocast keep one softmax in the compute dtype.
    return a * (e + (e + 1 if spec.dropout else 0.0))


def _mlp(spec: ModelSpec, setup: Setup, e: float, width: int, down_input_saved: bool) -> float:
    """What the MLP keeps per token: the activation's saves, a gated product's operands, the
    down projection's input (if it trains), T5's dropout mask."""
    if setup.compile:  # the min-cut partitioner keeps the matmul outputs, recomputes the rest
        return e * width * (2 if spec.gated_mlp else 1)
    # transformers writes GPT-2's tanh GELU as five ops; other frameworks call a fused one.
    hf_modules = framework_preset(setup.framework).hf_modules
    saves = _ACT_SAVES.get(spec.activation, 1) if hf_modules else 1
    composite_fp32 = saves > 1 and autocast(setup)
    # Under CUDA autocast that GELU's pow runs in fp32: the input stays 16-bit, the tanh,
    # 1 + tanh and the output are fp32 (the down projection keeps a 16-bit cast).
    # bitsandbytes returns its output in its input's dtype, and under autocast a LayerNorm's
    # output is fp32: behind a quantised up projection the activation runs in fp32.
    act_in = 4.0 if setup.method == "qlora" and spec.norm == "layer" and autocast(setup) else e
    act = width * (act_in + 4.0 * (saves - 1)) if composite_fp32 else act_in * width * saves
    inner_dropout = spec.family in _T5 and spec.dropout  # T5 drops out the activation
    if spec.gated_mlp:  # the activation's output and the up projection's, kept by their product
        body = act + width * ((4.0 if composite_fp32 else e) + e)
    elif spec.activation == "relu" and not inner_dropout:
        return e * width  # ReLU keeps its output, which is also the down projection's input
    else:
        body = act
    return body + (e * width if down_input_saved else 0.0) + (width if inner_dropout else 0.0)


def _lora_inputs(spec: ModelSpec, setup: Setup, e: float) -> float:
    """What adapters keep for backward beyond the frozen base, per token and layer.

    PEFT upcasts adapters to fp32 and casts each matrix's input to them: under
    autocast lora_A keeps a 16-bit copy, otherwise the fp32 cast itself, one per
    adapted matrix. Adapters in the compute dtype (torchtune, LitGPT) keep the
    input itself, once per distinct input (q, k and v read the same one). Each
    matrix's dropout adds its own copy and a one-byte mask; lora_A's output is
    kept for lora_B. Checked against saved-tensor hooks (test_activations.py).
    Routed experts are adapted as parameters (see :func:`expert_adapter_bytes`).
    """
    if setup.method not in ("lora", "qlora"):
        return 0.0
    matrices = [m for m in spec.lora_matrices(setup.lora_targets)
                if not m.name.startswith("experts.")]
    if setup.adapter_fp32:
        per = (2.0 if autocast(setup) else 4.0) + (1.0 if setup.lora_dropout else 0.0)
        inputs = sum(per * m.d_in * m.count for m in matrices)
    elif setup.lora_dropout:
        inputs = sum((e + 1.0) * m.d_in * m.count for m in matrices)
    else:
        inputs = e * sum({_input_of(m.name): m.d_in * m.count for m in matrices}.values())
    rank_out = (4.0 if setup.adapter_fp32 else e) * setup.lora_rank
    outputs = sum(rank_out * m.rank_scale * m.count for m in matrices)
    return (inputs + outputs) / max(1, spec.n_layers)


_SHARED_INPUT = {"k_proj": "q_proj", "v_proj": "q_proj", "kv_a_proj": "q_proj",
                 "q_a_proj": "q_proj", "up_proj": "gate_proj"}


def _input_of(name: str) -> str:
    """Matrices that read the same tensor share one key (q, k, v; gate and up)."""
    prefix, _, base = name.rpartition(".")
    base = base.removeprefix("cross_")
    return f"{prefix}.{'cross_' if 'cross_' in name else ''}{_SHARED_INPUT.get(base, base)}"


def held_quantized_inputs(spec: ModelSpec, setup: Setup) -> float:
    """The previous micro-batch's 4-bit matmul inputs, alive through this one's forward.

    bitsandbytes' MatMul4Bit (< 0.43.2) keeps its input as an attribute of its context
    (``ctx.tensors = (A, B)``), not as a saved tensor, so backward does not free it: it
    lives as long as the graph. A loop that holds the last micro-batch's logits until the
    next forward returns (LitGPT's ``logits = model(...)``) holds that graph, and so every
    block's inputs to its quantised linears, and the head's, beside the new activations.
    Under reentrant checkpointing each context lives in one layer's local graph: nothing.
    """
    preset = framework_preset(setup.framework)
    if not (setup.method == "qlora" and preset.keeps_last_graph and _inputs_saved(setup)[0]
            and setup.recompute != "full"):
        return 0.0
    h, width = spec.hidden, spec.active_intermediate if spec.is_moe else spec.intermediate
    # the attention's and the MLP's normed inputs (one tensor where a block shares its
    # norm), the attention output, the down projection's input
    per_layer = spec.norms_per_layer / 2 * 2 * h + spec.q_dim + width
    head = h if preset.quantizes_head else 0.0
    return local_tokens(setup) * element_bytes(setup) * (
        per_layer * spec.n_layers / setup.layout.pp + head)


def expert_adapter_bytes(spec: ModelSpec, setup: Setup) -> float:
    """PEFT's adapters on fused expert weights merge into a full copy of them per MoE layer
    (weight + B @ A, through torch's parametrize), which the expert matmuls keep for
    backward: every routed expert's weights again, in the base dtype, for each layer held
    (one at a time under full recompute)."""
    if setup.method not in ("lora", "qlora") or not spec.is_moe or not any(
            m.name.startswith("experts.") for m in spec.lora_matrices(setup.lora_targets)):
        return 0.0
    per_layer = spec.n_experts * spec.mlp_params(spec.moe_intermediate) * spec._block_scale
    layers = 1 if setup.recompute == "full" else spec.moe_layers
    return per_layer * layers * element_bytes(setup)


def block_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Activation bytes of all transformer blocks on the busiest GPU (first pipeline stage)."""
    lay = setup.layout
    tokens = local_tokens(setup)
    per_layer = _per_layer(spec, setup)
    layers = spec.n_layers / lay.pp
    if setup.activation_offload:  # the rest wait in CPU memory
        layers = min(layers, OFFLOAD_RESIDENT_LAYERS)
    if setup.recompute == "full":
        kept = element_bytes(setup) * spec.hidden / (lay.tp if lay.sequence_parallel else 1)
        stored = kept * layers * _in_flight(setup)
        return tokens * (stored + max(per_layer))  # one layer is rebuilt during backward
    return tokens * sum(per_layer) / len(per_layer) * layers * _in_flight(setup)


def rebuilt_layer_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Under full recompute, the one layer rebuilt in backward (part of :func:`block_bytes`)."""
    if setup.recompute != "full":
        return 0.0
    return local_tokens(setup) * max(_per_layer(spec, setup))


def local_tokens(setup: Setup) -> float:
    """Tokens of one micro batch on one GPU: context parallelism splits the sequence."""
    return setup.micro_batch * setup.seq_len / setup.layout.cp


def _per_layer(spec: ModelSpec, setup: Setup) -> list[float]:
    """Bytes per token of each block: dense, MoE, and decoder blocks with cross-attention."""
    s, tp, sp = setup.seq_len // setup.layout.cp, setup.layout.tp, setup.layout.sequence_parallel
    dense = layer_per_token(spec, setup, moe=False).total(s, tp, sp)
    moe = layer_per_token(spec, setup, moe=True).total(s, tp, sp) if spec.is_moe else 0.0
    n_moe = spec.moe_layers
    per_layer = [dense] * (spec.n_layers - n_moe) + [moe] * n_moe
    if spec.decoder_layers:  # encoder-decoder: the last blocks also attend to the source
        e = element_bytes(setup)
        decoder = dense + (cross_attention(spec, setup) + s * (
            _bias_per_key(spec, setup, e, True) - _bias_per_key(spec, setup, e, False))) / tp
        per_layer[-spec.decoder_layers:] = [decoder] * spec.decoder_layers
    return per_layer


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

    Hugging Face's loss keeps an fp32 log-softmax, and its backward adds two
    fp32 gradients while every activation is still held (12 bytes per logit at
    the peak, see ``LOGITS_EAGER``); Megatron's fused cross-entropy keeps the
    4 bytes. A chunked loss keeps the 16-bit logits and upcasts one chunk at a
    time; a fused one (Liger, Cut Cross-Entropy) never makes the tensor.
    """
    e = element_bytes(setup)
    tp = setup.layout.tp
    if setup.method == "inference" and spec.family in ENCODER_ONLY:
        return setup.micro_batch * setup.seq_len * spec.vocab * e / tp  # every position scored
    if setup.method == "inference":
        return setup.micro_batch * spec.vocab * (e + 4) / tp  # only the last position
    if setup.loss == "fused":
        return 0.0
    return local_tokens(setup) * spec.vocab * _per_logit(spec, setup, e) / tp


ENCODER_ONLY = ("bert", "roberta")
# Families whose loss is a plain CrossEntropyLoss on the model-dtype logits (no upcast).
_NO_UPCAST_LOSS = ("bert", "roberta", "t5", "mt5")


def _per_logit(spec: ModelSpec, setup: Setup, e: float) -> float:
    if setup.loss == "chunked" and framework_preset(setup.framework).loss_chunk_tokens:
        return 2 * e  # LitGPT: the logits and each chunk's log-softmax, never upcast
    if setup.loss == "chunked":  # torchtune's: see LOGITS_CHUNKED
        if setup.compile:
            return e + e / LOSS_CHUNKS
        return e + LOGITS_CHUNKED + 4.0 / LOSS_CHUNKS  # and the last chunk's fp32 upcast
    if setup.fused_layers:
        return LOGITS_TE
    if spec.family in _SOFTCAP:
        return LOGITS_EAGER + e  # the final logit softcap's tanh keeps its output
    if spec.family not in _NO_UPCAST_LOSS:
        return LOGITS_EAGER
    # log-softmax output, NLL gradient and log-softmax gradient: in the compute dtype, or
    # (CUDA autocast) the first two in fp32 and the last in the logits' dtype.
    return 8.0 + e if autocast(setup) else 3 * e


def inference_bytes(spec: ModelSpec, setup: Setup) -> float:
    """Transient workspace of one layer during prefill (nothing is kept for backward)."""
    e = element_bytes(setup)
    tokens = setup.micro_batch * setup.seq_len
    width = spec.active_intermediate if spec.is_moe else spec.intermediate
    mlp = (3 if spec.gated_mlp else 2) * e * width
    scores = 0.0
    if eager_attention(spec, setup):
        scores = spec.n_heads * setup.seq_len * (2 * e + 4)
    # T5's encoder keeps its position bias (heads x s x s) through every encoder layer
    bias = setup.seq_len * _bias_per_key(spec, setup, e, decoder=False) * setup.seq_len
    return (tokens * (4 * e * spec.hidden + max(mlp, scores)) + bias) / setup.layout.tp
