"""A plan as the memory-relevant keys of an axolotl config (axolotl 0.19 schema).

Paste them into your axolotl YAML (datasets, learning rate and the rest stay
yours): model and adapter, sequence length, micro batch and accumulation,
precision, checkpointing and activation offload, loss kernels, optimizer,
attention, and FSDP2, an inline DeepSpeed config or tensor / context
parallelism for the layout.
"""

from __future__ import annotations

from typing import Any

from core.export import deepspeed
from core.export._common import (
    HF_OPTIMIZERS,
    decoder_layer,
    lora_kinds,
    lora_modules,
    model_id,
    no_pipeline,
    optimizer,
    require,
    yaml_text,
)
from core.export.target import Export, Target
from core.memory import Setup

FILENAME = "axolotl.yaml"
FRAMEWORK = "axolotl"
LIGER = "axolotl.integrations.liger.LigerPlugin"
ATTENTION = {"flash": "flash_attention_2", "sdpa": "sdpa", "eager": "eager"}
ALL_LINEAR = frozenset({"q", "k", "v", "o", "gate", "up", "down"})


def render(target: Target) -> Export:
    lead = ["merge into your axolotl config (datasets, learning rate and the rest stay yours)"]
    return Export("axolotl", yaml_text(target, config(target), lead), FILENAME,
                  target.plan_hash)


def config(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    no_pipeline(target, FRAMEWORK)
    require(s.recompute in ("none", "full"), f"axolotl checkpoints whole layers only: recompute "
                                             f"{s.recompute} has no switch")
    require(not s.optimizer_in_backward, "axolotl steps the optimizer after backward")
    out: dict[str, Any] = {"base_model": model_id(target.spec)}
    out.update(_adapter(s))
    out.update(sequence_len=s.seq_len, micro_batch_size=s.micro_batch,
               gradient_accumulation_steps=s.grad_accum)
    out.update(_precision(s))
    out.update(gradient_checkpointing=s.recompute == "full" and not lay.fsdp,
               activation_offloading=s.activation_offload,
               optimizer=optimizer(s, HF_OPTIMIZERS, FRAMEWORK),
               attn_implementation=ATTENTION[s.attention])
    out.update(_loss(s))
    out.update(_layout(target))
    return out


def _adapter(s: Setup) -> dict[str, Any]:
    if s.method not in ("lora", "qlora"):
        return {}
    out: dict[str, Any] = {"adapter": s.method, "lora_r": s.lora_rank}
    if s.method == "qlora":
        require(s.precision == "nf4", "axolotl's QLoRA loads the base in 4-bit nf4")
        out["load_in_4bit"] = True
    if lora_kinds(s.lora_targets) == ALL_LINEAR:
        out["lora_target_linear"] = True
    else:
        out["lora_target_modules"] = lora_modules(s)
    return out


def _precision(s: Setup) -> dict[str, Any]:
    kind = s.compute_dtype if s.method == "qlora" else s.precision
    require(kind in ("bf16", "fp16", "fp32"), f"axolotl loads the model in 16-bit or fp32, "
                                              f"not {s.precision}: plan with --framework axolotl")
    return {"bf16": kind == "bf16", "fp16": kind == "fp16"}


def _loss(s: Setup) -> dict[str, Any]:
    if s.loss == "fused":  # Liger's fused linear cross-entropy: no logits materialised
        return {"plugins": [LIGER], "liger_fused_linear_cross_entropy": True}
    if s.loss == "chunked":
        return {"chunked_cross_entropy": True}
    return {}


def _layout(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    out: dict[str, Any] = {}
    if lay.fsdp:
        require(lay.fsdp != "hybrid", "axolotl's FSDP2 has no hybrid shard")
        fsdp: dict[str, Any] = {
            "offload_params": lay.offload_optimizer or lay.offload_params,
            "reshard_after_forward": lay.fsdp == "full",
            "activation_checkpointing": s.recompute == "full",
            "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "state_dict_type": "SHARDED_STATE_DICT",
        }
        layer = decoder_layer(target.spec)
        if layer:
            fsdp["transformer_layer_cls_to_wrap"] = layer[1]
        out.update(fsdp_version=2, fsdp_config=fsdp)
    elif lay.zero:
        out["deepspeed"] = deepspeed.settings(target)[0]
    if lay.tp > 1:
        out["tensor_parallel_size"] = lay.tp
    if lay.cp > 1:
        out["context_parallel_size"] = lay.cp
    return out


def read(config: dict[str, Any]) -> dict[str, Any]:
    """Setup fields an axolotl config states."""
    out: dict[str, Any] = {}
    for field, key in (("micro_batch", "micro_batch_size"), ("grad_accum", "gradient_accumulation_steps"),
                       ("seq_len", "sequence_len"), ("lora_rank", "lora_r"),
                       ("tp", "tensor_parallel_size"), ("cp", "context_parallel_size")):
        if isinstance(config.get(key), int) and config[key] > 0:
            out[field] = config[key]
    if config.get("adapter") in ("lora", "qlora"):
        out["method"] = "qlora" if config.get("load_in_4bit") else config["adapter"]
    elif "adapter" in config or "base_model" in config:
        out["method"] = "full"
    if config.get("bf16") is True or config.get("fp16") is True:
        out["precision"] = "bf16" if config.get("bf16") is True else "fp16"
    if isinstance(config.get("gradient_checkpointing"), bool):
        out["recompute"] = "full" if config["gradient_checkpointing"] else "none"
    if config.get("activation_offloading") is True:
        out["activation_offload"] = True
    if config.get("liger_fused_linear_cross_entropy") or config.get("cut_cross_entropy"):
        out["loss"] = "fused"
    elif config.get("chunked_cross_entropy"):
        out["loss"] = "chunked"
    attention = {v: k for k, v in ATTENTION.items()}.get(config.get("attn_implementation"))
    if attention:
        out["attention"] = attention
    names = {v: k for k, v in HF_OPTIMIZERS.items() if k != "sgd-momentum"}
    if config.get("optimizer") in names:
        out["optimizer"] = names[config["optimizer"]]
    out.update(_read_layout(config))
    return out


def _read_layout(config: dict[str, Any]) -> dict[str, Any]:
    fsdp = config.get("fsdp_config")
    if isinstance(fsdp, dict):
        offload = fsdp.get("offload_params") is True
        out = {"fsdp": "grad-op" if fsdp.get("reshard_after_forward") is False else "full",
               "offload_optimizer": offload, "offload_params": offload}
        if fsdp.get("activation_checkpointing") is True:
            out["recompute"] = "full"
        return out
    if isinstance(config.get("deepspeed"), dict):
        return deepspeed.read(config["deepspeed"])
    return {}
