"""Shape facts from HF-style training arguments, as trainers built on it save or print them.

``TrainingArguments`` (printed by the HF Trainer), LLaMA-Factory's
``training_args.yaml`` and ms-swift's ``args.json`` share most names; each adds
a few of its own (``cutoff_len``, ``finetuning_type``, ``tuner_type``...).
"""

from __future__ import annotations

from typing import Any

from core.dist_config import deepspeed_fields, fsdp_fields

_FIRST_INT = {
    "micro_batch": ("per_device_train_batch_size", "per_gpu_train_batch_size", "micro_batch_size"),
    "grad_accum": ("gradient_accumulation_steps",),
    "seq_len": ("max_seq_length", "max_length", "cutoff_len", "sequence_len", "model_max_length"),
    "n_gpus": ("global_world_size", "world_size"),
    "lora_rank": ("lora_rank", "lora_r"),
}
_ATTENTION = {"flash_attention_2": "flash", "flash_attention_3": "flash", "fa2": "flash", "fa3": "flash",
              "flash_attn": "flash", "flash": "flash", "sdpa": "sdpa", "eager": "eager", "disabled": "eager"}
_METHODS = {"lora": "lora", "qlora": "qlora", "full": "full", "freeze": "full", "dora": "lora"}


def shape_fields(args: dict[str, Any]) -> dict[str, Any]:
    """Shape fields these arguments state (values left at "auto" or None are not stated)."""
    out: dict[str, Any] = {}
    for field, keys in _FIRST_INT.items():
        value = next((args[k] for k in keys if _is_int(args.get(k))), None)
        if value:
            out[field] = value
    _precision(args, out)
    _method(args, out)
    _parallel(args, out)
    if isinstance(args.get("gradient_checkpointing"), bool):
        out["recompute"] = "full" if args["gradient_checkpointing"] else "none"
    attention = args.get("attn_implementation") or args.get("attn_impl") or args.get("flash_attn")
    if isinstance(attention, str) and attention.lower() in _ATTENTION:
        out["attention"] = _ATTENTION[attention.lower()]
    optimizer = args.get("optim")
    if isinstance(optimizer, str):
        out["optimizer"] = optimizer_name(optimizer)
    model = args.get("model_name_or_path") or args.get("model")
    if isinstance(model, str) and model:
        out["model"] = model
    return out


def optimizer_name(optim: str) -> str:
    """HF ``optim`` values grouped by what their state costs: adamw, adamw-8bit, adafactor, sgd..."""
    name = optim.lower()
    if "8bit" in name:
        return "adamw-8bit"
    if name.startswith(("adamw", "adam_", "paged_adamw")) or name == "adam":
        return "adamw"
    return name


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _precision(args: dict[str, Any], out: dict[str, Any]) -> None:
    if args.get("bf16") is True:
        out["precision"] = "mixed-bf16"
    elif args.get("fp16") is True:
        out["precision"] = "mixed-fp16"
    elif args.get("bf16") is False and args.get("fp16") is False:
        out["precision"] = "fp32"


def _method(args: dict[str, Any], out: dict[str, Any]) -> None:
    kind = args.get("finetuning_type") or args.get("tuner_type") or args.get("train_type")
    method = _METHODS.get(str(kind).lower()) if kind else None
    bits = args.get("quantization_bit") or args.get("quant_bits")
    if method == "lora" and _is_int(bits) and bits <= 4:
        method = "qlora"
        out["quantization"] = "nf4"
    if method:
        out["method"] = method
    if method in ("lora", "qlora"):
        alpha = args.get("lora_alpha")
        if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
            out["lora_alpha"] = alpha
        targets = args.get("lora_target") or args.get("target_modules")
        if isinstance(targets, str):
            targets = [t.strip() for t in targets.split(",") if t.strip()]
        if isinstance(targets, list) and targets:
            out["lora_targets"] = sorted(str(t) for t in targets)
    else:
        out.pop("lora_rank", None)  # frameworks keep a default rank even for full fine-tuning


def _parallel(args: dict[str, Any], out: dict[str, Any]) -> None:
    deepspeed = args.get("deepspeed")
    if isinstance(deepspeed, dict):
        out.update(deepspeed_fields(deepspeed))
    fsdp = args.get("fsdp")
    if fsdp:
        config = args.get("fsdp_config")
        out.update(fsdp_fields(fsdp, config if isinstance(config, dict) else None))
