"""Rows and arguments of HF-family trainers, as numbers and shape fields with canonical names.

The HF Trainer's printed dicts, ms-swift's ``logging.jsonl`` and LLaMA-Factory's
``trainer_log.jsonl`` log the same kind of row with a few keys of their own:
durations as text (``'1m 60s'``, ``'0:00:24'``), the step as ``'1/294'``,
memory and speed under their own names. Their arguments (``TrainingArguments``,
``args.json``, ``training_args.yaml``) likewise share most names. This is the
one place those keys are understood, so the console and the JSONL readers agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from core.dist_config import deepspeed_fields, fsdp_offload
from core.train_args import shape_fields
from tracker.readers._common import number
from tracker.readers.hf_trainer import is_summary_row
from tracker.readers.text._values import seconds

# ms-swift: "Gemma4ForConditionalGeneration: 25805.9339M Params (25233.1418M Trainable [97.7%])"
_PARAMETER_INFO = re.compile(r"(?P<total>[\d.]+)M Params \((?P<trainable>[\d.]+)M Trainable")

STEP_KEYS = ("step", "global_step", "current_steps")
# Keys that describe progress rather than measure the run.
SKIP = {"remaining_time", "percentage", "total_steps", "max_steps", "global_step/max_steps"}
# Trainer-specific names for canonical metrics (values already in canonical units).
RENAME = {
    "memory(GiB)": "mem_reserved_gib",  # ms-swift: torch.cuda.max_memory_reserved(), GiB
    "vram_allocated": "mem_peak_gib",  # LLaMA-Factory with RECORD_VRAM: max_memory_allocated(), GiB
    "vram_reserved": "mem_reserved_gib",  # LLaMA-Factory: max_memory_reserved(), GiB
    "train_speed(s/it)": "step_time_s",  # ms-swift, averaged since the start
    "throughput": "tokens_per_s",  # LLaMA-Factory: input tokens per second since the start
}
DURATIONS = {"elapsed_time": "elapsed_s"}


@dataclass
class Row:
    """A trainer log row: its step if it says, its kind, and its numbers."""

    step: int | None
    kind: str  # "train", "eval" or "summary"
    metrics: dict[str, float] = field(default_factory=dict)
    total_steps: int | None = None


def parse_row(row: dict[str, Any]) -> Row:
    """Numbers of ``row`` under canonical names where the trainer's own name is known."""
    step, total = _step(row)
    metrics: dict[str, float] = {}
    for key, value in row.items():
        if key in SKIP or key in STEP_KEYS or isinstance(value, (dict, list)):
            continue
        if key in DURATIONS:
            duration = seconds(value) if isinstance(value, str) else number(value)
            if duration is not None:
                metrics[DURATIONS[key]] = duration
            continue
        x = number(value)
        if x is None:
            continue
        if key == "train_speed(iter/s)":
            key, x = "step_time_s", (1.0 / x if x else float("nan"))
        metrics[RENAME.get(key, key)] = x
    return Row(step, _kind(metrics), metrics, total)


def _step(row: dict[str, Any]) -> tuple[int | None, int | None]:
    progress = row.get("global_step/max_steps")
    if isinstance(progress, str) and "/" in progress:
        done, _, total = progress.partition("/")
        if done.strip().isdigit():
            return int(done), int(total) if total.strip().isdigit() else None
    for key in STEP_KEYS:
        value = number(row.get(key))
        if value is not None:
            total = number(row.get("total_steps") or row.get("max_steps"))
            return int(value), int(total) if total is not None else None
    return None, None


def _kind(metrics: dict[str, float]) -> str:
    if is_summary_row(metrics.keys()):
        return "summary"
    if any(key.startswith(("eval_", "predict_", "test_")) for key in metrics):
        return "eval"
    return "train"


def trainer_shape(args: dict[str, Any]) -> dict[str, Any]:
    """Shape fields of HF-style training arguments, with their DeepSpeed and FSDP settings."""
    out = shape_fields(args)
    deepspeed = args.get("deepspeed")
    if isinstance(deepspeed, dict):
        out.update(deepspeed_fields(deepspeed))
    offload = fsdp_offload(args.get("fsdp"), args.get("fsdp_config") if isinstance(
        args.get("fsdp_config"), dict) else None)
    if offload is not None:
        out["cpu_offload"] = offload
    bits = args.get("quantization_bit") or args.get("quant_bits")
    if out.get("method") == "lora" and isinstance(bits, int) and bits <= 4:
        out["method"], out["quantization"] = "qlora", "nf4"  # LLaMA-Factory, ms-swift QLoRA
    if out.get("method") == "full":
        out.pop("lora_rank", None)  # frameworks keep a default rank even for full fine-tuning
    return out


def parameter_info(text: str) -> dict[str, int]:
    """Parameter counts from ms-swift's ``model_parameter_info`` text (millions, 4 decimals)."""
    match = _PARAMETER_INFO.search(text)
    if match is None:
        return {}
    return {"n_params": round(float(match["total"]) * 1e6),
            "n_trainable_params": round(float(match["trainable"]) * 1e6)}
