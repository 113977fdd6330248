"""A plan as a DeepSpeed config JSON (checked against DeepSpeed 0.19's config classes).

ZeRO stage, CPU offload of optimizer state and parameters, bf16/fp16, micro
batch, accumulation, the global batch (so DeepSpeed refuses a launch on the
wrong number of GPUs), gradient clipping, the reduce bucket the plan assumed,
and AutoTP's tensor parallel degree. The plan's stamp rides along as
``headroom_plan``, a top-level key DeepSpeed ignores.
"""

from __future__ import annotations

from typing import Any

from core.dist_config import deepspeed_fields, zero_offload
from core.export._common import half, json_text, require
from core.export.target import DEFAULT_CLIP, Export, Target
from core.memory.frameworks import framework as framework_preset

FILENAME = "ds_config.json"
KEY = "headroom_plan"


def render(target: Target) -> Export:
    config, notes = settings(target)
    return Export("deepspeed", json_text(config), FILENAME, target.plan_hash, notes)


def settings(target: Target) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The config dict and what the code around it must do (hf and axolotl embed it)."""
    s, lay = target.setup, target.lay
    require(lay.fsdp is None, "DeepSpeed shards with ZeRO, not FSDP: export hf, accelerate, "
                              "axolotl or lightning for this FSDP plan")
    require(lay.cp == 1, "DeepSpeed's config takes no context parallel degree")
    require(lay.tp == 1 or lay.zero <= 2, "DeepSpeed's AutoTP trains with ZeRO 0-2 only")
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
    }
    if lay.tp == 1 and lay.pp == 1:
        config["train_batch_size"] = s.global_batch  # DeepSpeed checks it against the launch
    config["gradient_clipping"] = DEFAULT_CLIP
    kind = half(s)
    if kind:
        config[kind] = {"enabled": True}
    config["zero_optimization"] = _zero(target)
    if lay.tp > 1:
        config["tensor_parallel"] = {"autotp_size": lay.tp}
    config[KEY] = target.stamp
    return config, _notes(target)


def _zero(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    zero: dict[str, Any] = {"stage": lay.zero}
    if lay.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if lay.offload_params:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    if lay.zero:
        # The memory model counted this bucket: DeepSpeed's own 5e8 elements, or the
        # hidden size squared that Hugging Face's "auto" sets.
        bucket = framework_preset(s.framework).zero_bucket or target.spec.hidden ** 2
        zero.update(reduce_bucket_size=int(bucket), contiguous_gradients=True,
                    overlap_comm=True)
    return zero


def _notes(target: Target) -> tuple[str, ...]:
    s, lay = target.setup, target.lay
    notes = []
    if s.recompute != "none":
        notes.append(f"recompute {s.recompute}: turn on activation checkpointing in the model "
                     "(model.gradient_checkpointing_enable() for HF models)")
    if s.optimizer not in ("adamw",):
        notes.append(f"optimizer {s.optimizer}: pass it to deepspeed.initialize(optimizer=...)")
    if lay.pp > 1:
        notes.append(f"pipeline: wrap the model in PipelineModule(num_stages={lay.pp})")
    if s.precision in ("bf16", "fp16"):
        notes.append("DeepSpeed keeps fp32 master weights in its optimizer; the plan's pure "
                     f"{s.precision} figure leaves them out")
    return tuple(notes)


def read(config: dict[str, Any]) -> dict[str, Any]:
    """Setup fields a DeepSpeed config states ("auto" values are left to the trainer)."""
    stated = deepspeed_fields(config)
    out = {field: stated[name] for name, field in _SHAPE_NAMES.items() if name in stated}
    if "zero_optimization" in config:
        out["offload_optimizer"], out["offload_params"] = zero_offload(config)
    tp = config.get("tensor_parallel")
    autotp = tp.get("autotp_size") if isinstance(tp, dict) else None
    if isinstance(autotp, int) and not isinstance(autotp, bool) and autotp > 1:
        out["tp"] = autotp
    return out


# Shape fields deepspeed_fields names -> Setup fields.
_SHAPE_NAMES = {"zero_stage": "zero", "precision": "precision", "micro_batch": "micro_batch",
                "grad_accum": "grad_accum"}
