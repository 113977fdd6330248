"""Headroom JSONL logs of LoRA runs whose memory peaks follow known coefficients.

The calibration tests (tracker and desktop) ingest these through the real
ingest path and check the fit finds what was put in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from core.calibration import _terms, predict_gib
from core.memory import Setup
from core.models import preset

# The coefficients the runs' peaks obey: activations x, logits x, offset GiB, reserved x, context.
TRUE = np.array([1.25, 1.0, 1.0, 1.15, 0.8])
COUNTER_SERIES = {"allocated": "mem_peak_gib", "reserved": "mem_reserved_gib"}


def write_run(folder: Path, name: str, model: str | None, batch: int, seq: int,
              peaks: dict[str, float], shape_extra: dict | None = None,
              oom: float | None = None, config: dict | None = None) -> Path:
    """A LoRA run on one H100 that logged ``peaks`` (by counter), or died of OOM."""
    shape = {"model": model, "method": "lora", "recompute": "none", "lora_rank": 16, "micro_batch": batch,
             "seq_len": seq, "precision": "mixed-bf16", "attention": "sdpa",
             "framework": "transformers", "gpu_model": "NVIDIA H100 80GB HBM3", "n_gpus": 1,
             **(shape_extra or {})}
    lines = [{"headroom": 1, "run": {"name": name, "shape": shape, "config": config or {}}}]
    for step in range(1, 4):
        lines.append({"step": step, "loss": 2.0 / step,
                      **{COUNTER_SERIES[c]: v * (0.9 + 0.05 * step) for c, v in peaks.items()}})
    if oom:
        lines.append({"step": 4, "event": {"kind": "oom", "capacity_gib": oom}})
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def truth(model: str, batch: int, seq: int, counter: str) -> float:
    """The peak a LoRA run of ``model`` reaches under :data:`TRUE`, in GiB."""
    setup = Setup(method="lora", lora_rank=16, micro_batch=batch, seq_len=seq)
    return predict_gib(_terms(preset(model), setup), TRUE, counter)[0]
