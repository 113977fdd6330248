"""A plan as an ``accelerate launch --config_file`` YAML (accelerate 1.x keys).

Processes and machines, mixed precision, and the plugin the layout needs:
FSDP (version 2, or version 1 for hybrid sharding) with its offload and
activation checkpointing, DeepSpeed with its ZeRO stage, offload and
accumulation, and FSDP2's parallelism config for tensor and context
parallelism. The micro batch and the optimizer live in the training script;
the header and the notes say which.
"""

from __future__ import annotations

from typing import Any

from core.export._common import decoder_layer, half, no_pipeline, require, yaml_text
from core.export.target import DEFAULT_CLIP, Export, Target

FILENAME = "accelerate.yaml"
PRECISIONS = {"bf16": "bf16", "fp16": "fp16", None: "no"}
SHARDING = {"full": "FULL_SHARD", "grad-op": "SHARD_GRAD_OP", "hybrid": "HYBRID_SHARD"}


def render(target: Target) -> Export:
    s = target.setup
    lead = [f"in the script: DataLoader(batch_size={s.micro_batch}); Accelerator("
            f"gradient_accumulation_steps={s.grad_accum}); optimizer {s.optimizer}"]
    return Export("accelerate", yaml_text(target, config(target), lead), FILENAME,
                  target.plan_hash, _notes(target))


def config(target: Target) -> dict[str, Any]:
    lay = target.lay
    no_pipeline(target, "accelerate")
    out: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": _distributed_type(target),
        "num_machines": lay.nodes,
        "num_processes": lay.n_gpus,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": PRECISIONS[half(target.setup)],
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
        "downcast_bf16": "no",
    }
    if lay.fsdp:
        out["fsdp_config"] = _fsdp(target)
        if lay.tp > 1 or lay.cp > 1:
            out["parallelism_config"] = _parallelism(target)
    elif lay.zero:
        out["deepspeed_config"] = _deepspeed(target)
    else:
        require(lay.tp == 1 and lay.cp == 1, "accelerate runs tensor and context parallelism "
                                             "under FSDP2 only: pick an FSDP plan (--plan N)")
    return out


def _distributed_type(target: Target) -> str:
    lay = target.lay
    if lay.fsdp:
        return "FSDP"
    if lay.zero:
        return "DEEPSPEED"
    return "MULTI_GPU" if lay.n_gpus > 1 else "NO"


def _fsdp(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    version = 1 if lay.fsdp == "hybrid" else 2
    config: dict[str, Any] = {
        "fsdp_version": version,
        "fsdp_reshard_after_forward": SHARDING[lay.fsdp] if version == 1 else lay.fsdp == "full",
        "fsdp_offload_params": lay.offload_optimizer or lay.offload_params,
        "fsdp_activation_checkpointing": s.recompute == "full",
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_cpu_ram_efficient_loading": True,
    }
    layer = decoder_layer(target.spec)
    if layer:
        config["fsdp_transformer_layer_cls_to_wrap"] = layer[1]
    return config


def _parallelism(target: Target) -> dict[str, Any]:
    lay = target.lay
    require(lay.fsdp != "hybrid", "accelerate's parallelism config needs FSDP2 (full or "
                                  "grad-op sharding), not hybrid")
    return {"parallelism_config_dp_replicate_size": 1,
            "parallelism_config_dp_shard_size": lay.dp,
            "parallelism_config_tp_size": lay.tp,
            "parallelism_config_cp_size": lay.cp}


def _deepspeed(target: Target) -> dict[str, Any]:
    lay = target.lay
    require(lay.tp == 1 and lay.cp == 1, "accelerate's DeepSpeed plugin takes no tensor or "
                                         "context parallel degree: export deepspeed")
    config: dict[str, Any] = {
        "zero_stage": lay.zero,
        "offload_optimizer_device": "cpu" if lay.offload_optimizer else "none",
        "offload_param_device": "cpu" if lay.offload_params else "none",
        "gradient_accumulation_steps": target.setup.grad_accum,
        "gradient_clipping": DEFAULT_CLIP,
    }
    if lay.zero == 3:
        config.update(zero3_init_flag=True, zero3_save_16bit_model=True)
    return config


def _notes(target: Target) -> tuple[str, ...]:
    s, lay = target.setup, target.lay
    notes = []
    if s.recompute != "none" and not (lay.fsdp and s.recompute == "full"):
        notes.append(f"recompute {s.recompute}: turn on activation checkpointing in the model")
    if s.loss == "fused":
        notes.append("fused loss: apply Liger's fused linear cross-entropy "
                     "(liger_kernel.transformers.apply_liger_kernel_to_*)")
    if lay.fsdp and lay.offload_optimizer and not lay.offload_params:
        notes.append("FSDP's CPU offload moves parameters and gradients too, not only the "
                     "optimizer state: less GPU memory and slower steps than the plan says")
    return tuple(notes)


def read(config: dict[str, Any]) -> dict[str, Any]:
    """Setup fields an accelerate config states."""
    out: dict[str, Any] = {}
    if isinstance(config.get("num_processes"), int) and config["num_processes"] > 0:
        out["n_gpus"] = config["num_processes"]
    precision = {"bf16": "mixed-bf16", "fp16": "mixed-fp16", "fp8": "fp8", "no": "fp32"}.get(
        str(config.get("mixed_precision")))
    if precision:
        out["precision"] = precision
    kind = str(config.get("distributed_type", "")).upper()
    if kind == "FSDP" and isinstance(config.get("fsdp_config"), dict):
        out.update(_read_fsdp(config["fsdp_config"]))
        out.update(_read_parallelism(config.get("parallelism_config") or {}))
    elif kind == "DEEPSPEED" and isinstance(config.get("deepspeed_config"), dict):
        out.update(_read_deepspeed(config["deepspeed_config"]))
    return out


def _read_fsdp(fsdp: dict[str, Any]) -> dict[str, Any]:
    reshard = fsdp.get("fsdp_reshard_after_forward", fsdp.get("fsdp_sharding_strategy", True))
    modes = {True: "full", False: "grad-op", **{v: k for k, v in SHARDING.items()}}
    offload = fsdp.get("fsdp_offload_params") is True
    out = {"fsdp": modes.get(str(reshard).upper() if isinstance(reshard, str) else reshard,
                             "full"),
           "offload_optimizer": offload, "offload_params": offload}
    if fsdp.get("fsdp_activation_checkpointing") is True:
        out["recompute"] = "full"
    return out


def _read_parallelism(config: dict[str, Any]) -> dict[str, Any]:
    names = {"tp": "parallelism_config_tp_size", "cp": "parallelism_config_cp_size"}
    return {field: config[key] for field, key in names.items()
            if isinstance(config.get(key), int) and config[key] > 1}


def _read_deepspeed(config: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offload_optimizer": config.get("offload_optimizer_device") in ("cpu", "nvme"),
        "offload_params": config.get("offload_param_device") in ("cpu", "nvme"),
    }
    if isinstance(config.get("zero_stage"), int):
        out["zero"] = config["zero_stage"]
    if isinstance(config.get("gradient_accumulation_steps"), int):
        out["grad_accum"] = config["gradient_accumulation_steps"]
    return out
