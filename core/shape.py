"""A run's shape: what the memory model needs to know, and where each fact came from.

Readers fill what a log states (``config.json``, ``hparams.yaml``, Megatron's
arguments dump...); the user completes the rest in the app. Every field keeps
its source so the app can show "seq_len = 2048 (from hparams.yaml)".
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

# Allowed values of the categorical fields, for validation and the app's menus.
METHODS = ("full", "lora", "qlora", "inference")
PRECISIONS = ("fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16", "fp8", "int8", "nf4")
# "op": per-op selective checkpointing (torchtitan): matmul and attention outputs kept, every
# second matmul and the pointwise ops recomputed.
RECOMPUTE = ("none", "selective", "op", "full")
ATTENTION = ("eager", "sdpa", "flash")
LOSSES = ("standard", "chunked", "fused")


@dataclass
class RunShape:
    """Model architecture and training setup of one run; every field optional."""

    model: str | None = None  # model name or path as the log states it
    family: str | None = None  # architecture family, e.g. "llama"
    n_params: int | None = None
    n_trainable_params: int | None = None
    n_layers: int | None = None
    hidden: int | None = None
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    vocab: int | None = None
    intermediate: int | None = None
    tied_embeddings: bool | None = None
    n_experts: int | None = None
    n_active_experts: int | None = None
    method: str | None = None
    precision: str | None = None
    optimizer: str | None = None
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_targets: list[str] | None = None
    quantization: str | None = None
    micro_batch: int | None = None
    global_batch: int | None = None
    grad_accum: int | None = None
    seq_len: int | None = None
    recompute: str | None = None
    attention: str | None = None
    loss: str | None = None  # standard, chunked or fused cross-entropy
    compile: bool | None = None
    activation_offload: bool | None = None
    optimizer_in_backward: bool | None = None
    n_gpus: int | None = None
    n_nodes: int | None = None
    zero_stage: int | None = None
    fsdp: str | None = None
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    sequence_parallel: bool | None = None
    cpu_offload: bool | None = None
    gpu_model: str | None = None
    gpu_mem_gib: float | None = None
    framework: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    @cache
    def field_names(cls) -> tuple[str, ...]:
        """The shape's fields (cached: every row of a big runs table asks)."""
        return tuple(f.name for f in fields(cls) if f.name != "sources")

    def set(self, name: str, value: Any, source: str, *, overwrite: bool = True) -> None:
        """Set one field from ``source``; None values are ignored."""
        if value is None or name not in self.field_names():
            return
        if not overwrite and getattr(self, name) is not None:
            return
        setattr(self, name, value)
        self.sources[name] = source

    def update(self, values: dict[str, Any], source: str, *, overwrite: bool = True) -> None:
        for name, value in values.items():
            self.set(name, value, source, overwrite=overwrite)

    def merge(self, other: RunShape) -> None:
        """Fill the fields this shape lacks from ``other``, keeping their sources."""
        for name in self.field_names():
            value = getattr(other, name)
            if value is not None and getattr(self, name) is None:
                self.set(name, value, other.sources.get(name, "unknown"))

    def known(self) -> dict[str, Any]:
        """The fields that have a value."""
        return {n: getattr(self, n) for n in self.field_names() if getattr(self, n) is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"values": self.known(), "sources": dict(self.sources)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunShape:
        shape = cls()
        if not data:
            return shape
        sources = data.get("sources", {})
        for name, value in data.get("values", {}).items():
            shape.set(name, value, sources.get(name, "unknown"))
        return shape
