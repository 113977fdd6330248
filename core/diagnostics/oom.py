"""Out of memory: at the start (static memory does not fit) or mid-run (an activation peak).

Log readers record OOM messages as ``oom`` events with the sizes the message
states (``tried_gib``, ``capacity_gib``, ``free_gib``, ``allocated_gib``,
``reserved_gib``); the recorders add the peaks at the crash (``mem_peak_gib``,
``mem_reserved_gib``) and the exception's type (``error``). Reserved but
unallocated memory at least as large as the allocation that failed means the
allocator's cache was fragmented. Article: "训练开始就OOM → static memory too
big: lower precision or LoRA, then more GPUs; 训练中途OOM → activation peak:
recompute, smaller batch or sequence length".
"""

from __future__ import annotations

import numpy as np

from core.diagnostics._stats import finite
from core.diagnostics.finding import CRITICAL, Finding, RunData
from core.runlog import RunEvent

START_STEP = 3  # an OOM at or before this step, or before any logged step, is "at start"
FRAGMENTED = 1.3  # peak reserved this many times peak allocated: a fragmented cache
SHAPE_FIELDS = ("model", "n_params", "method", "precision", "optimizer", "micro_batch",
                "seq_len", "grad_accum", "recompute", "n_gpus", "zero_stage", "fsdp", "tp", "pp",
                "gpu_model", "gpu_mem_gib")
# What the recorders call the sizes the log readers parse from the message.
RECORDED = {"mem_peak_gib": "allocated_gib", "mem_reserved_gib": "reserved_gib"}

START_CAUSE = "Static memory (weights, gradients and optimizer states) does not fit on the GPU."
START_REMEDY = ("Lower the precision (bf16, 8-bit optimizer), switch to LoRA or QLoRA, shard "
                "with ZeRO/FSDP, or add GPUs. Size the next run from this run's shape first "
                "(headroom size, or Size my next run in the app).")
MID_CAUSE = "An activation peak: a long batch, an evaluation or a generation needed more memory."
MID_REMEDY = ("Turn on activation recomputation (gradient checkpointing), lower the micro batch "
              "or the sequence length (or cap the eval/generation length).")
FRAGMENT_CAUSE = " Reserved memory far above allocated points to allocator fragmentation."
FRAGMENT_REMEDY = ("Memory was fragmented: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, "
                   "and avoid tensors of ever-changing size (pad to fixed lengths). ")


def out_of_memory(run: RunData) -> list[Finding]:
    device = [e for e in run.events_of("oom") if e.data.get("error") != "MemoryError"]
    if device:
        return [_device_oom(run, device[0], len(device))]
    host = [e for e in run.events if _host_oom_event(e)]
    return [_host_oom(run, host[0])] if host else []


def _host_oom_event(event: RunEvent) -> bool:
    """The OOM killer (log readers) or Python's MemoryError (recorders): host RAM ran out."""
    return (event.kind == "exception" and event.data.get("type") == "HostOutOfMemory") or (
        event.kind == "oom" and event.data.get("error") == "MemoryError")


def _device_oom(run: RunData, event: RunEvent, count: int) -> Finding:
    done = _steps_done(run, event.step)
    at_start = done == 0 or (event.step is not None and event.step <= START_STEP)
    evidence = _sizes(event)
    evidence.update(step=event.step, logged_steps_before=done, oom_messages=count,
                    shape={k: v for k, v in run.shape.known().items() if k in SHAPE_FIELDS},
                    **_fragmentation(run, evidence))
    evals = run.get("eval_loss")
    if event.step is not None and evals is not None:
        evidence["during_eval"] = bool(np.isin(event.step, evals.steps))
    cause, remedy = (START_CAUSE, START_REMEDY) if at_start else (MID_CAUSE, MID_REMEDY)
    if evidence.get("fragmented"):
        cause, remedy = cause + FRAGMENT_CAUSE, FRAGMENT_REMEDY + remedy
    return Finding(
        "oom_start" if at_start else "oom_mid", CRITICAL, _message(event, at_start, evidence),
        cause, remedy, event.step, event.step, None,
        () if event.step is None else (event.step,), evidence,
    )


def _sizes(event: RunEvent) -> dict:
    """The event's sizes in GiB under the log readers' names."""
    sizes = {RECORDED.get(k, k): v for k, v in event.data.items()
             if isinstance(v, int | float) and not isinstance(v, bool) and k.endswith("_gib")}
    if isinstance(event.data.get("gpu"), int):
        sizes["gpu"] = event.data["gpu"]
    return sizes


def _message(event: RunEvent, at_start: bool, evidence: dict) -> str:
    done = evidence["logged_steps_before"]
    where = "at the start" if at_start else f"mid-run, after {done} logged steps"
    if evidence.get("during_eval"):
        where += ", during evaluation"
    text = f"Out of GPU memory {where}"
    if event.step is not None:
        text += f" (step {event.step})"
    if "tried_gib" in evidence and "capacity_gib" in evidence:
        text += (f": tried to allocate {evidence['tried_gib']:.3g} GiB on a "
                 f"{evidence['capacity_gib']:.3g} GiB GPU")
    return text


def _steps_done(run: RunData, step: int | None) -> int:
    """Logged steps before the OOM (all of them when it has no step: it ended the run)."""
    loss = run.get("loss")
    if loss is None:
        return 0
    steps, _ = finite(loss)
    return int(len(steps) if step is None else (steps < step).sum())


def _fragmentation(run: RunData, sizes: dict) -> dict:
    """Evidence of a fragmented cache: from the message, else from the logged peaks."""
    if "reserved_gib" in sizes and "allocated_gib" in sizes:
        cached = sizes["reserved_gib"] - sizes["allocated_gib"]
        return {"reserved_unallocated_gib": round(cached, 4),
                "fragmented": bool("tried_gib" in sizes and cached >= sizes["tried_gib"])}
    reserved, allocated = run.get("mem_reserved_gib"), run.get("mem_peak_gib")
    if reserved is None or allocated is None:
        return {}
    ratio = float(np.nanmax(reserved.values) / np.nanmax(allocated.values))
    return {"reserved_over_allocated": ratio, "fragmented": ratio >= FRAGMENTED}


def _host_oom(run: RunData, event: RunEvent) -> Finding:
    evidence = {"step": event.step, "logged_steps_before": _steps_done(run, event.step),
                "cpu_offload": run.shape.cpu_offload}
    return Finding(
        "oom_host", CRITICAL, "The host ran out of memory and the process was ended",
        "CPU RAM, not GPU memory, ran out: optimizer or parameter offload to the CPU, large "
        "data loader workers or prefetching, or several processes loading the model at once.",
        "Offload less (or to NVMe), use fewer data loader workers, load checkpoints with mmap, "
        "or run on a host with more RAM.",
        event.step, event.step, None, () if event.step is None else (event.step,), evidence,
    )
