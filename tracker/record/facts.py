"""What a recorder learns from the live objects of a run: model, optimizer, batches.

Everything here duck-types (no framework imports), so the same functions serve
HF models, Lightning modules and any ``torch.nn.Module``. Each returns shape
fields (``core.shape.RunShape`` names) and leaves out what it cannot tell.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from core.hf_config import shape_fields

# Libraries whose versions change memory use or speed, as the process imported them.
LIBRARIES = (
    "torch",
    "transformers",
    "accelerate",
    "peft",
    "bitsandbytes",
    "deepspeed",
    "lightning",
    "pytorch_lightning",
    "trl",
    "flash_attn",
    "liger_kernel",
)
# torch dtype -> shape precision, for runs that train in the parameters' own dtype.
DTYPES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}
# Quantised layer classes (bitsandbytes) -> shape quantization.
QUANT_LAYERS = {"Linear4bit": "nf4", "LinearNF4": "nf4", "LinearFP4": "fp4", "Linear8bitLt": "int8"}


def model_facts(model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(shape fields, config entries) for a ``torch.nn.Module``, HF or not."""
    shape: dict[str, Any] = {}
    config: dict[str, Any] = {}
    hf_config = find_hf_config(model)
    if hf_config is not None:
        as_dict = hf_config.to_dict()
        shape.update(shape_fields(as_dict))
        shape["attention"] = attention_kind(getattr(hf_config, "_attn_implementation", None))
        config["model_config"] = as_dict
    shape.update(_parameter_facts(model))
    if type(model).__name__ == "OptimizedModule":  # torch.compile's wrapper
        shape["compile"] = True
    peft = getattr(model, "peft_config", None)
    if isinstance(peft, dict) and peft:
        adapter = next(iter(peft.values()))
        shape.update(_adapter_facts(adapter, shape.get("quantization")))
        config["peft"] = adapter.to_dict() if hasattr(adapter, "to_dict") else str(adapter)
    elif shape.get("n_trainable_params"):
        shape["method"] = "full"
    return {k: v for k, v in shape.items() if v is not None}, config


def find_hf_config(model: Any) -> Any | None:
    """The Hugging Face config of ``model`` or of the first submodule that has one."""
    for module in _modules(model):
        config = getattr(module, "config", None)
        if hasattr(config, "to_dict") and hasattr(config, "model_type"):
            return config
    return None


def attention_kind(implementation: Any) -> str | None:
    """HF's ``attn_implementation`` as a shape value: eager, sdpa or flash."""
    name = str(implementation or "").lower()
    if name.startswith(("flash", "kernels-community/flash")):
        return "flash"
    return name if name in ("eager", "sdpa") else None


def _modules(model: Any):
    yield model
    modules = getattr(model, "modules", None)
    if modules is not None:
        yield from modules()


def _parameter_facts(model: Any) -> dict[str, Any]:
    """Parameter counts (whole, not sharded), quantisation, recompute and storage dtype."""
    if not hasattr(model, "parameters"):
        return {}
    total = trainable = 0
    dtypes: dict[str, int] = {}
    for p in model.parameters():
        n = _numel(p)
        total += n
        if p.requires_grad:
            trainable += n
            dtypes[str(p.dtype)] = dtypes.get(str(p.dtype), 0) + n
    facts: dict[str, Any] = {"n_params": total, "n_trainable_params": trainable}
    if dtypes:
        facts["precision"] = DTYPES.get(max(dtypes, key=dtypes.__getitem__))
    layers = {type(m).__name__ for m in model.modules()}
    facts["quantization"] = next((q for cls, q in QUANT_LAYERS.items() if cls in layers), None)
    flags = [
        m.gradient_checkpointing for m in model.modules() if hasattr(m, "gradient_checkpointing")
    ]
    if flags:
        facts["recompute"] = "full" if any(flags) else "none"  # HF recomputes whole layers
    return facts


def _numel(p: Any) -> int:
    """Elements of a parameter as the model defines it.

    DeepSpeed ZeRO-3 leaves an empty shard (``ds_numel`` is the full size);
    bitsandbytes packs two 4-bit values per byte.
    """
    n = getattr(p, "ds_numel", None) or p.numel()
    if type(p).__name__ == "Params4bit":
        n *= 2 * p.element_size()
    return int(n)


def _adapter_facts(adapter: Any, quantization: str | None) -> dict[str, Any]:
    """LoRA rank, alpha and targets of a PEFT adapter config; "qlora" over a 4-bit base."""
    kind = getattr(adapter, "peft_type", "")
    if str(getattr(kind, "value", kind)).upper() not in ("LORA", "ADALORA", "LOHA", "LOKR"):
        return {}
    targets = getattr(adapter, "target_modules", None)
    if isinstance(targets, str):
        targets = [targets]
    return {
        "method": "qlora" if quantization in ("nf4", "fp4") else "lora",
        "lora_rank": getattr(adapter, "r", None),
        "lora_alpha": getattr(adapter, "lora_alpha", None),
        "lora_targets": sorted(targets) if targets else None,
    }


def precision(amp: str | None, weights: str | None) -> str | None:
    """The shape's precision from autocast's dtype and the trainable weights' dtype.

    Autocast over fp32 weights is mixed precision (fp32 master weights, 16 B per
    parameter with AdamW); over bf16/fp16 weights it changes nothing: pure 16-bit.
    """
    if amp and weights in (None, "fp32"):
        return f"mixed-{amp}"
    return weights or amp


def optimizer_name(optimizer: Any) -> str | None:
    """The real optimizer's class, lower-cased ("adamw", "adamw8bit", "sgd"...).

    Unwraps what frameworks put around it (accelerate, Lightning, DeepSpeed).
    """
    seen = 0
    while optimizer is not None and seen < 8:
        inner = getattr(optimizer, "optimizer", None) or getattr(optimizer, "_optimizer", None)
        if inner is None or inner is optimizer:
            break
        optimizer, seen = inner, seen + 1
    return None if optimizer is None else type(optimizer).__name__.lower()


def batch_facts(batch: Any) -> tuple[int | None, int | None, int | None]:
    """(samples, tokens, sequence length) of one batch, read from tensor shapes only.

    Token ids are ``input_ids`` or a 2-D integer tensor; other batches (images,
    audio) have samples but no tokens. No tensor is read, so no device sync.
    """
    tensor = _main_tensor(batch)
    if tensor is None or not getattr(tensor, "shape", None):
        return None, None, None
    samples = int(tensor.shape[0])
    if tensor.dim() == 2 and not tensor.is_floating_point():
        return samples, int(tensor.numel()), int(tensor.shape[1])
    return samples, None, None


def _main_tensor(batch: Any) -> Any | None:
    if hasattr(batch, "shape") and hasattr(batch, "dim"):
        return batch
    if hasattr(batch, "keys") and hasattr(batch, "values"):
        if "input_ids" in batch:
            return batch["input_ids"]
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            found = _main_tensor(item)
            if found is not None:
                return found
    return None


def versions() -> dict[str, str]:
    """Python, CUDA and the versions of the libraries this process has imported.

    Read from the modules, not package metadata: a library the run never
    imported did not shape it, and the metadata scan would cost milliseconds.
    """
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        version = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(version, str):
            found[name] = version
    torch = sys.modules.get("torch")
    if torch is not None and torch.version.cuda:
        found["cuda"] = torch.version.cuda
    return found
