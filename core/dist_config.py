"""Shape facts from DeepSpeed and FSDP settings that argument dicts pass along.

:mod:`core.train_args` reads flat arguments; a DeepSpeed config is a nested
dict of its own (``zero_optimization.stage``, ``offload_optimizer.device``) and
FSDP states offload in words (``"full_shard auto_wrap offload"``). The ZeRO
stage and offload change the memory a run needs, so they belong in its shape.
"""

from __future__ import annotations

from typing import Any

_BATCH_KEYS = (("micro_batch", "train_micro_batch_size_per_gpu"),
               ("grad_accum", "gradient_accumulation_steps"), ("global_batch", "train_batch_size"))


def deepspeed_fields(config: dict[str, Any]) -> dict[str, Any]:
    """ZeRO stage, offload, precision and batch sizes a DeepSpeed config states.

    Values left at "auto" are decided by the trainer and say nothing here.
    """
    out: dict[str, Any] = {}
    zero = config.get("zero_optimization")
    if isinstance(zero, dict):
        if isinstance(zero.get("stage"), int):
            out["zero_stage"] = zero["stage"]
        out["cpu_offload"] = any(zero_offload(config))
    for key, precision in (("bf16", "mixed-bf16"), ("fp16", "mixed-fp16")):
        section = config.get(key)
        if isinstance(section, dict) and section.get("enabled") is True:
            out["precision"] = precision
    for field, key in _BATCH_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[field] = value
    return out


def zero_offload(config: dict[str, Any]) -> tuple[bool, bool]:
    """(optimizer state, parameters): what a DeepSpeed config offloads to CPU or NVMe."""
    zero = config.get("zero_optimization")
    if not isinstance(zero, dict):
        return False, False
    return _offloaded(zero.get("offload_optimizer")), _offloaded(zero.get("offload_param"))


def _offloaded(section: Any) -> bool:
    return isinstance(section, dict) and section.get("device") in ("cpu", "nvme")


def fsdp_offload(fsdp: Any, fsdp_config: dict[str, Any] | None = None) -> bool | None:
    """Whether an HF-style FSDP setting offloads parameters to the CPU (None: no FSDP stated)."""
    words = fsdp.split() if isinstance(fsdp, str) else [str(w) for w in fsdp or []]
    config = {k.removeprefix("fsdp_"): v for k, v in (fsdp_config or {}).items()}
    if config.get("offload_params") is True or config.get("cpu_offload") is True:
        return True
    return "offload" in words if words else None
