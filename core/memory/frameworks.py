"""What each training framework does by default that moves peak memory.

``headroom size --framework torchtune`` means "the way torchtune runs it
unless I say otherwise": its precision (pure bf16, no fp32 master), its
adapter dtype, its activation checkpointing, its loss (chunked logits), its
optimizer. Each preset below was read in the framework's own code and
shipped configs (2025-2026 releases); ``docs/frameworks.md`` cites them.
Fields a user states always win over a preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# DeepSpeed's reduce bucket when its config leaves reduce_bucket_size unset (elements);
# Hugging Face's "auto" sets it to hidden_size squared instead.
DEEPSPEED_BUCKET = 500_000_000


@dataclass(frozen=True)
class Framework:
    """One framework's memory-relevant defaults and behaviours."""

    name: str
    title: str
    defaults: Mapping[str, Any] = field(default_factory=dict)  # Setup fields, every method
    by_method: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    one_gpu_full: Mapping[str, Any] = field(default_factory=dict)  # single-device full recipe
    many_gpus: Mapping[str, Any] = field(default_factory=dict)  # when the run spans GPUs
    fused_layers: bool = False  # Transformer Engine layers: Korthikanti's activation counts
    hf_modules: bool = False  # runs transformers' modelling code (its unfused GELU, RMSNorm)
    mixed_keeps_fp32_base: bool = False  # "mixed" precision keeps a frozen base in fp32
    master_only: bool = False  # FSDP2: the fp32 shards are the only copy at rest
    persistent_grads: bool = False  # gradient buffers allocated once and kept (fp32 partitions)
    zero_bucket: int | None = None  # ZeRO reduce bucket (elements); None: hidden_size squared
    nf4_saves_input: bool = True  # 4-bit base matmuls keep their input (bitsandbytes < 0.43.2)
    # 4-bit weights quantised from fp16, so each dequantisation makes an fp16 weight and, under
    # bf16 compute, a bf16 copy of it: bitsandbytes < 0.43 (Params4bit.cuda calls .half()) and
    # Lightning Fabric's _Linear4bit in every release (quantize: .to(dtype=torch.half)).
    nf4_fp16_state: bool = True
    # Its loop holds the last micro-batch's outputs (so its autograd graph) through the next
    # forward: bitsandbytes' MatMul4Bit keeps its input on ctx (ctx.tensors = (A, B)), not as a
    # saved tensor, so those inputs outlive backward until the graph dies.
    keeps_last_graph: bool = False
    # What its own model code and loop do that transformers' would not (the simulated step
    # follows them; see tracker/simulate):
    quantized_autocast: bool = True  # QLoRA steps under autocast (HF Trainer's bf16=True)
    quantizes_head: bool = False  # bitsandbytes swaps the output layer too
    unties_embeddings: bool = False  # its model has its own output layer (a tied one is copied)
    loss_chunk_tokens: int = 0  # head and loss per chunk of tokens, no upcast, logits kept
    # Run-shape facts its logs leave unsaid only when they hold their default: Megatron prints
    # every argument, and nanoGPT has no LoRA, checkpointing or offload to state.
    unsaid: Mapping[str, Any] = field(default_factory=dict)
    # Memory knobs beyond per-layer checkpointing and sharding that it offers a user:
    # "fused_loss" (Liger / Cut Cross-Entropy), "activation_offload", "op" and "selective"
    # recompute. The planner only proposes what the framework can do.
    knobs: frozenset[str] = frozenset({"fused_loss"})
    aliases: tuple[str, ...] = ()
    summary: str = ""

    def setup_fields(self, method: str, n_gpus: int) -> dict[str, Any]:
        """The Setup fields this framework sets for ``method`` on ``n_gpus`` GPUs."""
        out = {**self.defaults, **self.by_method.get(method, {})}
        if n_gpus > 1:
            out.update(self.many_gpus)
        elif method == "full":
            out.update(self.one_gpu_full)
        return out


def _frozen(**methods: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({k: MappingProxyType(v) for k, v in methods.items()})


FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (
    Framework(
        "hf", "Hugging Face Trainer (+ PEFT, accelerate)", hf_modules=True,
        aliases=("transformers", "accelerate", "peft", "ms-swift", "swift"),
        summary="precision as loaded (fp32 weights + bf16 autocast: 18 B/param); PEFT adapters "
                "in fp32; no activation checkpointing; logits upcast to fp32 for the loss; "
                "DDP keeps a second gradient copy in its buckets"),
    Framework(
        "trl", "TRL SFTTrainer", hf_modules=True, mixed_keeps_fp32_base=True,
        knobs=frozenset({"fused_loss", "activation_offload"}),
        defaults={"recompute": "full", "loss": "fused"},
        by_method=_frozen(qlora={"adapter_fp32": False}),
        summary="loads fp32 and trains under bf16 autocast; gradient checkpointing on; "
                "chunked NLL loss (256-token chunks, checkpointed: no b x s x vocab tensor); "
                "QLoRA adapters cast to bf16"),
    Framework(
        # torchao's LinearNF4 keeps only the NF4 weight on its context and dequantises it again
        # for backward (torchao/dtypes/nf4tensor.py); every LoRA config torchtune ships sets
        # lora_dropout: 0.0 (recipes/configs at 30b8519e8 and at the last release).
        "torchtune", "torchtune", nf4_saves_input=False, nf4_fp16_state=False,
        quantized_autocast=False,
        knobs=frozenset({"activation_offload"}),
        defaults={"precision": "bf16", "adapter_fp32": False, "recompute": "full",
                  "loss": "chunked"},
        by_method=_frozen(lora={"lora_dropout": False}, qlora={"lora_dropout": False}),
        one_gpu_full={"optimizer": "paged-adamw-8bit", "optimizer_in_backward": True},
        summary="pure bf16 (no fp32 master, bf16 Adam states and adapters, no LoRA "
                "dropout); activation checkpointing per layer; 8 chunks of logits (compiled: "
                "only the bf16 chunks kept); the single-GPU full recipe steps paged 8-bit "
                "AdamW inside backward; NF4 linears keep no input"),
    Framework(
        "torchtitan", "torchtitan", master_only=True, knobs=frozenset({"op", "selective"}),
        unsaid={"method": "full", "cpu_offload": False},
        defaults={"recompute": "selective"},
        summary="FSDP2 keeps fp32 shards (the only copy at rest) and all-gathers each layer in "
                "bf16; fp32 gradients; selective activation checkpointing; full fp32 logits; "
                "logs the reserved counter"),
    Framework(
        # Lightning Fabric's bitsandbytes plugin swaps every nn.Linear (the head too) and runs
        # forward under a default-dtype context, not autocast; LitGPT's GPT keeps wte and lm_head
        # apart (convert_hf_checkpoint copies a tied embedding) and its loop calls the head and
        # chunked_cross_entropy per 128 tokens in bf16; the loop's `logits = model(...)` holds the
        # last micro-batch's logits, and with them its graph, until the next forward returns
        # (finetune/lora.py at 8641822 and at 00af8b0d, which pins bitsandbytes 0.42.0).
        "litgpt", "LitGPT", mixed_keeps_fp32_base=True, keeps_last_graph=True,
        quantized_autocast=False, quantizes_head=True, unties_embeddings=True,
        loss_chunk_tokens=128,
        knobs=frozenset(),
        defaults={"precision": "bf16", "adapter_fp32": False, "loss": "chunked"},
        by_method=_frozen(qlora={"optimizer": "paged-adamw"}),
        many_gpus={"recompute": "full"},
        summary="config-hub runs in bf16-true (8 B/param, bf16 adapters); 128-token chunks of "
                "bf16 logits, no fp32 upcast; no checkpointing on one GPU, per block under "
                "FSDP; QLoRA with 32-bit paged AdamW, the head quantised too (from fp16: each "
                "dequantisation also makes a bf16 copy), and the last micro-batch's 4-bit matmul "
                "inputs held through the next forward; bf16-mixed keeps fp32 weights"),
    Framework(
        "axolotl", "axolotl", hf_modules=True,
        knobs=frozenset({"fused_loss", "activation_offload"}),
        defaults={"precision": "bf16"},
        summary="loads bf16 and trains under bf16 autocast (no fp32 master); PEFT adapters in "
                "fp32; checkpointing off unless the config turns it on (examples do); HF loss "
                "unless the Liger / Cut Cross-Entropy plugin is on"),
    Framework(
        "llama-factory", "LLaMA-Factory", hf_modules=True, aliases=("llamafactory",),
        defaults={"recompute": "full"},
        summary="trainable parameters upcast to fp32 under bf16 autocast (README: 18x GB full, "
                "8x with pure_bf16); gradient checkpointing on by default; HF loss"),
    Framework(
        "unsloth", "Unsloth", hf_modules=True, knobs=frozenset(),
        defaults={"recompute": "full", "activation_offload": True, "loss": "fused"},
        by_method=_frozen(full={"optimizer": "adamw-8bit"}, lora={"optimizer": "adamw-8bit"},
                          qlora={"optimizer": "adamw-8bit"}),
        summary="4-bit base by default; checkpointed layer inputs offloaded to CPU; fused "
                "chunked cross-entropy; notebooks train with 8-bit AdamW"),
    Framework(
        "deepspeed", "DeepSpeed", persistent_grads=True, zero_bucket=DEEPSPEED_BUCKET,
        summary="fp32 master and gradient partitions allocated at start (ZeRO-3: 18 B/param / "
                "N); reduce buckets of 5e8 elements unless the config sets them"),
    Framework(
        "megatron", "Megatron-LM / Megatron-Core", fused_layers=True, persistent_grads=True,
        knobs=frozenset({"selective", "fused_loss"}),
        unsaid={"method": "full", "recompute": "none", "cpu_offload": False},
        aliases=("megatron-lm", "megatron-core", "nemo"),
        summary="bf16 weights with persistent fp32 main_grad and fp32 master (18 B/param, "
                "6 + 12/d with the distributed optimizer); Transformer Engine layers; "
                "vocab-parallel cross-entropy keeps one fp32 softmax"),
    Framework(
        "megatron-deepspeed", "Megatron-DeepSpeed", fused_layers=True, persistent_grads=True,
        unsaid={"method": "full", "recompute": "none"},
        zero_bucket=DEEPSPEED_BUCKET,
        summary="Megatron's layers under DeepSpeed's ZeRO engine"),
    Framework(
        "nanogpt", "nanoGPT, llm.c, modded-nanogpt", aliases=("llm.c", "llmc", "modded-nanogpt"),
        unsaid={"method": "full", "recompute": "none", "cpu_offload": False},
        summary="plain PyTorch (or C/CUDA) pretraining loops: full training, no checkpointing "
                "or offload unless the code was changed"),
)}
_ALIASES = {alias: f.name for f in FRAMEWORKS.values() for alias in (f.name, *f.aliases)}


def framework(name: str | None) -> Framework:
    """The preset for a framework name as a user or a log writes it (unknown: plain HF-like)."""
    key = (name or "").strip().lower()
    found = _ALIASES.get(key)
    return FRAMEWORKS[found] if found else Framework(key or "unknown", key or "unknown")


def canonical(name: str | None) -> str:
    """The preset's name for ``name`` (the name itself when no preset knows it)."""
    return framework(name).name
