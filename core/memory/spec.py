"""A model's architecture as the memory model needs it, with exact parameter counts.

Counts follow the layer inventory of each family (attention with GQA or
DeepSeek's multi-head latent attention, gated or plain MLP, MoE experts).
When the exact total is known (a preset, or the model built on torch's meta
device) it wins, and the analytical count only splits it into parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property


@dataclass(frozen=True)
class Matrix:
    """One kind of linear layer in a transformer block: shape, role, how many."""

    name: str
    d_in: int
    d_out: int
    role: str  # "attention" or "mlp"
    count: int  # instances in the whole model
    rank_scale: int = 1  # LoRA rank multiple PEFT gives it (fused expert gate and up: 2)

    @property
    def params(self) -> int:
        return self.d_in * self.d_out * self.count


@dataclass(frozen=True)
class ModelSpec:
    """Architecture facts of one model; ``n_params`` is the exact total when known."""

    name: str
    family: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    tied_embeddings: bool = False
    gated_mlp: bool = True
    fused_qkv: bool = False  # q, k and v are one linear (GPT-2's c_attn, Phi-3's qkv_proj)
    fused_gate_up: bool = False  # gate and up are one linear (Phi-3's gate_up_proj)
    qk_norm: bool = False  # RMSNorm on queries and keys (Qwen3, OLMoE, Gemma 3)
    activation: str = "silu"  # "silu", "gelu", "gelu_new" (tanh composite), "relu"
    dropout: bool = False  # attention / hidden dropout active in training (GPT-2, BERT, T5...)
    norm: str = "rms"  # "rms" or "layer"
    norms_per_layer: int = 2
    n_experts: int = 0  # routed experts per MoE layer; 0 for a dense model
    n_active_experts: int = 0
    n_shared_experts: int = 0
    moe_intermediate: int = 0
    dense_layers: int = 0  # leading dense layers of a MoE model (DeepSeek)
    q_lora_rank: int = 0  # multi-head latent attention (DeepSeek V2/V3)
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    decoder_layers: int = 0  # of n_layers, blocks with cross-attention (T5, Whisper)
    positions: int = 0  # learned position embeddings
    n_params: int | None = None
    source: str = ""
    note: str = ""

    def with_params(self, n_params: int | None, source: str = "") -> ModelSpec:
        return replace(self, n_params=n_params, source=source or self.source)

    # ---- layers

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.n_layers - self.dense_layers if self.is_moe else 0

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def active_intermediate(self) -> int:
        """MLP width a token goes through in a MoE layer (active + shared experts)."""
        return (self.n_active_experts + self.n_shared_experts) * self.moe_intermediate

    def _attention(self, count: int, prefix: str = "") -> list[Matrix]:
        h = self.hidden
        if self.mla:
            qk = self.head_dim  # nope + rope per head
            v = self.v_head_dim or self.head_dim
            q = [Matrix("q_proj", h, self.n_heads * qk, "attention", count)]
            if self.q_lora_rank:
                q = [Matrix("q_a_proj", h, self.q_lora_rank, "attention", count),
                     Matrix("q_b_proj", self.q_lora_rank, self.n_heads * qk, "attention", count)]
            return q + [
                Matrix("kv_a_proj", h, self.kv_lora_rank + self.rope_head_dim, "attention", count),
                Matrix("kv_b_proj", self.kv_lora_rank,
                       self.n_heads * (qk - self.rope_head_dim + v), "attention", count),
                Matrix("o_proj", self.n_heads * v, h, "attention", count),
            ]
        out = Matrix(f"{prefix}o_proj", self.q_dim, h, "attention", count)
        if self.fused_qkv:  # one adapter, one quantised matrix, one input for all three
            return [Matrix(f"{prefix}qkv_proj", h, self.q_dim + 2 * self.kv_dim, "attention",
                           count), out]
        return [
            Matrix(f"{prefix}q_proj", h, self.q_dim, "attention", count),
            Matrix(f"{prefix}k_proj", h, self.kv_dim, "attention", count),
            Matrix(f"{prefix}v_proj", h, self.kv_dim, "attention", count),
            out,
        ]

    def _mlp(self, width: int, count: int, prefix: str = "") -> list[Matrix]:
        h = self.hidden
        if count == 0 or width == 0:
            return []
        down = Matrix(f"{prefix}down_proj", width, h, "mlp", count)
        if self.gated_mlp and prefix == "experts.":
            # transformers 5 stores routed experts as fused 3-D parameters; PEFT adapts the fused
            # gate and up with twice the rank (its v4-to-v5 target conversion)
            return [Matrix(f"{prefix}gate_up_proj", h, 2 * width, "mlp", count, 2), down]
        if self.gated_mlp and self.fused_gate_up:
            return [Matrix(f"{prefix}gate_up_proj", h, 2 * width, "mlp", count), down]
        up = [Matrix(f"{prefix}gate_proj", h, width, "mlp", count)] if self.gated_mlp else []
        return up + [Matrix(f"{prefix}up_proj", h, width, "mlp", count), down]

    @cached_property
    def matrices(self) -> tuple[Matrix, ...]:
        """Every linear layer of the transformer blocks (what LoRA adapts, NF4 quantises)."""
        out = self._attention(self.n_layers)
        out += self._attention(self.decoder_layers, "cross_")
        dense = self.n_layers - self.moe_layers
        out += self._mlp(self.intermediate, dense)
        moe = self.moe_layers
        out += self._mlp(self.moe_intermediate, moe * self.n_experts, "experts.")
        out += self._mlp(self.moe_intermediate, moe * self.n_shared_experts, "shared_experts.")
        return tuple(out)

    # ---- parameter counts

    @property
    def embedding_params(self) -> int:
        return (self.vocab + self.positions) * self.hidden

    @property
    def head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @cached_property
    def _small_params(self) -> int:
        """Norms and routers: tiny, but part of an exact count."""
        norms = (self.n_layers * self.norms_per_layer + 1) * self.hidden
        norms *= 2 if self.norm == "layer" else 1
        return norms + self.moe_layers * self.n_experts * self.hidden

    @cached_property
    def analytic_params(self) -> int:
        linear = sum(m.params for m in self.matrices)
        return linear + self._small_params + self.embedding_params + self.head_params

    @property
    def total_params(self) -> int:
        return self.n_params or self.analytic_params

    @cached_property
    def _block_scale(self) -> float:
        """Exact over analytical block parameters (biases, extra norms, vision towers...)."""
        analytic = self.analytic_params - self.embedding_params - self.head_params
        exact = self.total_params - self.embedding_params - self.head_params
        return exact / analytic if analytic > 0 and exact > 0 else 1.0

    @property
    def block_params(self) -> int:
        return self.total_params - self.embedding_params - self.head_params

    @property
    def linear_params(self) -> float:
        """Parameters in block linears: what bitsandbytes quantises (not embeddings, norms)."""
        return sum(m.params for m in self.matrices) * self._block_scale

    def layer_params(self, moe: bool) -> float:
        """Parameters of one dense (or one MoE) transformer block."""
        attn = sum(m.d_in * m.d_out for m in self._attention(1))
        h = self.hidden
        if moe:
            mlp = (self.n_experts + self.n_shared_experts) * self.mlp_params(self.moe_intermediate)
            mlp += self.n_experts * h
        else:
            mlp = self.mlp_params(self.intermediate)
        return (attn + mlp + self.norms_per_layer * h) * self._block_scale

    def mlp_params(self, width: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden * width

    @property
    def largest_layer_params(self) -> float:
        """The biggest module gathered at once under ZeRO-3/FSDP (a block or the embedding)."""
        blocks = [self.layer_params(moe=False)] if self.n_layers > self.moe_layers else []
        if self.is_moe:
            blocks.append(self.layer_params(moe=True))
        return max(blocks + [self.vocab * self.hidden])

    @property
    def largest_tensor_params(self) -> int:
        """The biggest single parameter: what optimizer-in-backward holds a gradient of."""
        return max([self.vocab * self.hidden] + [m.d_in * m.d_out for m in self.matrices])

    @property
    def active_params(self) -> float:
        """Parameters a token passes through (MoE: active and shared experts only)."""
        if not self.is_moe:
            return self.total_params
        idle = self.n_experts - self.n_active_experts
        return self.total_params - self.moe_layers * idle * self.mlp_params(
            self.moe_intermediate) * self._block_scale

    def lora_params(self, rank: int, targets: str) -> int:
        """Exact LoRA trainable count: rank x (d_in + d_out) for every adapted matrix."""
        adapted = sum(rank * m.rank_scale * (m.d_in + m.d_out) * m.count
                      for m in self.lora_matrices(targets))
        if targets == "all-linear":  # PEFT adapts MoE routers too (as parameters, in v5)
            adapted += rank * (self.hidden + self.n_experts) * self.moe_layers
        return adapted

    def lora_matrices(self, targets: str) -> tuple[Matrix, ...]:
        found = self._lora_cache.get(targets)
        if found is None:
            found = self._lora_cache[targets] = tuple(
                m for m in self.matrices if _adapted(m.name, targets))
        return found

    @cached_property
    def _lora_cache(self) -> dict[str, tuple[Matrix, ...]]:
        return {}

    def describe(self) -> str:
        moe = f", {self.n_experts} experts ({self.n_active_experts} active)" if self.is_moe else ""
        return (f"{self.name}: {self.total_params / 1e9:.2f}B params, {self.n_layers} layers, "
                f"hidden {self.hidden}, {self.n_heads} heads ({self.n_kv_heads} kv), "
                f"vocab {self.vocab}{moe}")


# PEFT's targets: its default for Llama-like models is q and v; "attention" adds k and o;
# "all-linear" adapts every linear layer of the blocks. A comma list names the kinds.
NAMED_TARGETS = {"qv": ("q", "v"), "attention": ("q", "k", "v", "o"),
                 "all-linear": ("q", "k", "v", "o", "gate", "up", "down")}
# Which kinds a block's matrices are (DeepSeek's latent attention splits q and kv in two).
# Fused matrices (Phi-3's qkv_proj and gate_up_proj, MoE experts) are all of their kinds.
_KIND = {"q_proj": {"q"}, "q_a_proj": {"q"}, "q_b_proj": {"q"}, "k_proj": {"k"}, "v_proj": {"v"},
         "kv_a_proj": {"k"}, "kv_b_proj": {"v"}, "qkv_proj": {"q", "k", "v"}, "o_proj": {"o"},
         "gate_proj": {"gate"}, "up_proj": {"up"}, "gate_up_proj": {"gate", "up"},
         "down_proj": {"down"}}
_KINDS = frozenset(kind for kinds in _KIND.values() for kind in kinds)


class TargetError(ValueError):
    """LoRA targets that name no known kind of matrix."""


def lora_kinds(targets: str) -> frozenset[str]:
    """The kinds of matrix (q, k, v, o, gate, up, down) a targets string adapts."""
    if targets in NAMED_TARGETS:
        return frozenset(NAMED_TARGETS[targets])
    kinds = frozenset(t.strip() for t in targets.split(",") if t.strip())
    unknown = kinds - _KINDS
    if unknown or not kinds:
        raise TargetError(f"unknown LoRA targets {targets!r}: give qv, attention, all-linear "
                          "or a comma list of q,k,v,o,gate,up,down")
    return kinds


def _adapted(name: str, targets: str) -> bool:
    base = name.rsplit(".", 1)[-1].removeprefix("cross_")
    if targets == "qv":  # latent attention adapts the up-projections of q and kv
        return base in ("q_proj", "v_proj", "q_b_proj", "kv_b_proj", "qkv_proj")
    return bool(_KIND.get(base, set()) & lora_kinds(targets))
