"""Training-setup facts from an argument dict, whichever framework wrote it.

HF ``TrainingArguments``, Megatron's argument namespace and Lightning's
``hparams.yaml`` spell the same facts differently (``per_device_train_batch_size``,
``micro_batch_size``, ``batch_size``; ``bf16: true``, ``precision: bf16-mixed``).
This maps the common spellings onto :class:`core.shape.RunShape` fields, saying
only what the arguments state. Architecture keys go through :mod:`core.hf_config`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.hf_config import shape_fields as arch_fields

# Integer fields: the first key present wins, so more specific spellings come first.
_INT_KEYS: dict[str, tuple[str, ...]] = {
    "micro_batch": (
        "per_device_train_batch_size", "micro_batch_size", "train_micro_batch_size_per_gpu",
        "micro_batch", "batch_size",
    ),
    "global_batch": ("global_batch_size", "global_batch"),
    "grad_accum": (
        "gradient_accumulation_steps", "accumulate_grad_batches", "grad_accum",
        "gradient_accumulation",
    ),
    "seq_len": (
        "seq_length", "seq_len", "max_seq_length", "max_seq_len", "sequence_length",
        "context_length", "block_size", "cutoff_len", "model_max_length", "max_length",
    ),
    "tp": ("tensor_model_parallel_size", "tensor_parallel_size", "tp_size",
           "tensor_parallel_degree"),
    "pp": ("pipeline_model_parallel_size", "pipeline_parallel_size", "pp_size",
           "pipeline_parallel_degree"),
    "cp": ("context_parallel_size", "context_parallel_degree", "cp_size"),
    "n_gpus": ("world_size", "n_gpus", "num_gpus", "devices"),
    "n_nodes": ("num_nodes", "nnodes", "n_nodes"),
    "zero_stage": ("zero_stage",),
    "lora_rank": ("lora_rank", "lora_r"),
}

# Lightning's precision flag, and accelerate's mixed_precision.
_PRECISION = {
    "bf16-mixed": "mixed-bf16", "16-mixed": "mixed-fp16", "bf16-true": "bf16", "16-true": "fp16",
    "32-true": "fp32", "32": "fp32", "64-true": "fp32", "16": "mixed-fp16", "bf16": "mixed-bf16",
    "fp16": "mixed-fp16", "transformer-engine": "fp8", "fp8": "fp8",
}
_ATTENTION = {"flash_attention_2": "flash", "flash_attention_3": "flash", "flash": "flash",
              "sdpa": "sdpa", "eager": "eager"}
_METHODS = ("full", "lora", "qlora")


def shape_fields(args: dict[str, Any]) -> dict[str, Any]:
    """Shape fields stated by a (possibly nested) argument dict."""
    leaves = _leaves(args)
    for key in ("optimizer", "loss"):  # torchtune names classes: {"_component_": "pkg.Class"}
        node = args.get(key)
        if isinstance(node, dict) and isinstance(node.get("_component_"), str):
            leaves[f"{key}_component"] = node["_component_"]
    if "architectures" in leaves and leaves.get("max_length") == 20:
        # W&B and MLflow log the HF model config beside the arguments; its max_length
        # is the generation default (20), not the training sequence length.
        del leaves["max_length"]
    out = arch_fields(leaves)
    if str(out.get("family", "")).startswith("ModelType."):
        del out["family"]  # Megatron's model_type is an enum (encoder_or_decoder), not a family
    for name, keys in _INT_KEYS.items():
        value = _first(leaves, keys, _int)
        if value is not None:
            out[name] = value
    for name, read in _READERS.items():
        value = read(leaves)
        if value is not None:
            out[name] = value
    return out


def _leaves(args: dict[str, Any]) -> dict[str, Any]:
    """Nested configs (``cfg.data.batch_size``) flattened to their last key, shallowest first."""
    out: dict[str, Any] = {}
    level = [args]
    while level:
        deeper = []
        for node in level:
            for key, value in node.items():
                if isinstance(value, dict):
                    deeper.append(value)
                else:
                    out.setdefault(str(key), value)
        level = deeper
    return out


def _first(leaves: dict[str, Any], keys: tuple[str, ...], convert: Callable[[Any], Any]) -> Any:
    for key in keys:
        value = convert(leaves.get(key))
        if value is not None:
            return value
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _precision(leaves: dict[str, Any]) -> str | None:
    flag = leaves.get("precision", leaves.get("mixed_precision"))
    if flag is not None and not isinstance(flag, bool):
        return _PRECISION.get(str(flag).strip().lower())
    # HF and Megatron: bf16/fp16 switches keep fp32 master weights (mixed precision).
    if leaves.get("bf16") is True:
        return "mixed-bf16"
    if leaves.get("fp16") is True:
        return "mixed-fp16"
    return None


def _optimizer(leaves: dict[str, Any]) -> str | None:
    name = leaves.get("optim", leaves.get("optimizer", leaves.get("optimizer_component")))
    if isinstance(name, str) and "." in name:  # torchtune's _component_: bitsandbytes.optim.X
        name = name.rsplit(".", 1)[-1]
    if not isinstance(name, str) or not name:
        return None
    name = name.strip().lower()
    if "adam" in name and "8bit" in name:
        return "paged_adamw_8bit" if "paged" in name else "adamw_8bit"
    if "adam" in name and "paged" in name:  # bitsandbytes' 32-bit paged AdamW
        return "paged_adamw"
    if name.startswith("adam"):
        return "adamw"  # Megatron's and HF's "adam" variants decouple weight decay
    return name


def _recompute(leaves: dict[str, Any]) -> str | None:
    if "recompute_granularity" in leaves:  # Megatron: None, "selective" or "full"
        value = leaves["recompute_granularity"]
        return str(value) if value in ("selective", "full") else "none"
    if leaves.get("selective_ac_option") == "op" and leaves.get("mode") == "selective":
        return "op"  # torchtitan's per-op policy
    if leaves.get("disable_gradient_checkpointing") is True:  # LLaMA-Factory: on by default
        return "none"
    mode = leaves.get("activation_checkpointing", leaves.get("gradient_checkpointing",
                      leaves.get("enable_activation_checkpointing")))
    if isinstance(mode, bool):
        return "full" if mode else "none"
    if isinstance(mode, str) and mode in ("none", "selective", "full"):
        return mode
    return None


def _attention(leaves: dict[str, Any]) -> str | None:
    name = leaves.get("attn_implementation", leaves.get("_attn_implementation"))
    if isinstance(name, str):
        return _ATTENTION.get(name)
    backend = leaves.get("attention_backend")  # Megatron: "AttnBackend.flash" or "flash"
    if isinstance(backend, str):
        return _ATTENTION.get(backend.rsplit(".", 1)[-1])
    return "flash" if leaves.get("use_flash_attn") is True else None


def _fsdp(leaves: dict[str, Any]) -> str | None:
    value = leaves.get("fsdp")
    if value is True:  # transformers 5: FSDP on, sharded as fsdp_config says
        return "shard_grad_op" if leaves.get("reshard_after_forward") is False else "full_shard"
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if isinstance(value, str) and value.strip():
        return value.strip().split()[0]
    strategy = leaves.get("strategy")
    return "fsdp" if isinstance(strategy, str) and strategy.lower().startswith("fsdp") else None


def _method(leaves: dict[str, Any]) -> str | None:
    value = next((leaves[k] for k in ("train_type", "tuner_type", "finetuning_type") if k in leaves), None)
    return value if value in _METHODS else None


def _kv_heads(leaves: dict[str, Any]) -> int | None:
    # Megatron states GQA as a switch plus a group count; the count alone means nothing.
    if leaves.get("group_query_attention") is True:
        return _int(leaves.get("num_query_groups"))
    return None


def _bool(key: str) -> Callable[[dict[str, Any]], bool | None]:
    return lambda leaves: leaves[key] if isinstance(leaves.get(key), bool) else None


def _text(*keys: str) -> Callable[[dict[str, Any]], str | None]:
    def read(leaves: dict[str, Any]) -> str | None:
        return _first(leaves, keys, lambda v: v if isinstance(v, str) and v else None)

    return read


def _loss(leaves: dict[str, Any]) -> str | None:
    """Fused (Liger, Cut Cross-Entropy) or chunked (torchtune's chunked losses) cross-entropy."""
    if any(leaves.get(k) is True for k in ("use_liger_kernel", "enable_liger_kernel",
                                           "liger_fused_linear_cross_entropy",
                                           "cut_cross_entropy")):
        return "fused"
    component = leaves.get("loss_component")
    if isinstance(component, str) and ("Chunked" in component or "LinearCrossEntropy" in component):
        return "chunked"
    return None


def _compile(leaves: dict[str, Any]) -> bool | None:
    for key in ("torch_compile", "compile"):  # HF, torchtune (torchtitan: compile.enable)
        if isinstance(leaves.get(key), bool):
            return leaves[key]
    return None


_READERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "loss": _loss,
    "compile": _compile,
    "activation_offload": lambda leaves: _first(
        leaves, ("enable_activation_offloading", "activation_offloading"),
        lambda v: v if isinstance(v, bool) else None),
    "optimizer_in_backward": _bool("optimizer_in_bwd"),
    "precision": _precision,
    "optimizer": _optimizer,
    "recompute": _recompute,
    "attention": _attention,
    "fsdp": _fsdp,
    "method": _method,
    "n_kv_heads": _kv_heads,
    "sequence_parallel": _bool("sequence_parallel"),
    "model": _text("pretrained_model_name_or_path", "model_name_or_path"),
}
