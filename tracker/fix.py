"""A stored run that ran out of GPU memory, and the smallest changes that would fit.

The run's recorded shape becomes the memory model's inputs; its OOM event
says what the card had and what was asked of it (:mod:`core.fix`). Each
proposal comes with the config to launch it from, in the format of the run's
framework where that format can express it, else as launch lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.export import Export, ExportError, Target, export, format_for
from core.fix import Failure, Fix, failure, fixes, run_gpu
from core.gpus import GPU, find
from core.memory import ModelSpec, Setup, check
from core.memory.from_shape import inputs_from_shape
from core.runlog import RunEvent
from tracker.store import RunSummary, Store


class NoFix(ValueError):
    """The run cannot be answered (no OOM, too little shape); one line for the user."""


@dataclass(frozen=True)
class Answer:
    """``headroom fix RUN``: the failure, the run as the model sees it, and the proposals."""

    run_id: int
    name: str
    spec: ModelSpec
    setup: Setup
    gpu: GPU
    failed: Failure
    defaulted: list[str]  # shape fields the run did not record
    fixes: list[Fix]
    exports: list[Export | None] = field(default_factory=list)
    export_notes: list[str] = field(default_factory=list)


def answer(store: Store, run: RunSummary, gpu_name: str | None = None, fmt: str | None = None,
           limit: int = 3) -> Answer:
    """The proposals for one stored run (NoFix when it has no OOM or too little shape)."""
    oom = _oom(store.events(run.id, ["oom"]))
    if oom is None:
        raise NoFix(f"run {run.id} ({run.name}) has no GPU out-of-memory event to fix")
    try:
        spec, setup, defaulted = inputs_from_shape(run.shape)
        check(spec, setup)
    except ValueError as err:
        raise NoFix(f"run {run.id} ({run.name}): {err}") from None
    gpu = _gpu(run, oom, gpu_name)
    setup = setup.but(gpus_per_node=min(gpu.gpus_per_node, setup.layout.gpus_per_node))
    failed = failure(spec, setup, gpu, oom.data)
    found = fixes(spec, setup, gpu, failed, limit)
    chosen = fmt or format_for(setup.framework)
    exported = [_export(spec, f, chosen) for f in found]
    return Answer(run.id, run.name, spec, setup, gpu, failed, defaulted, found,
                  [e for e, _ in exported], [n for _, n in exported if n])


def as_dict(a: Answer) -> dict[str, Any]:
    """What ``headroom fix --json`` prints."""
    f = a.failed
    return {
        "run": a.run_id, "name": a.name, "model": a.spec.name, "gpu": a.gpu.name,
        "gpus": a.setup.layout.n_gpus, "global_batch": a.setup.global_batch,
        "failure": {"capacity_gib": round(f.capacity_gib, 3), "needed_gib": round(f.needed_gib, 3),
                    "predicted_gib": round(f.predicted_gib, 3), "tried_gib": f.tried_gib,
                    "free_gib": f.free_gib, "shortfall_gib": round(f.shortfall_gib, 3)},
        "assumed": a.defaulted,
        "fixes": [_fix_dict(fix, e) for fix, e in zip(a.fixes, a.exports, strict=True)],
        "export_notes": a.export_notes,
    }


def failure_text(report: dict[str, Any]) -> str:
    """The failure and the model's figure, in a sentence (the CLI and the app say it alike)."""
    f = report["failure"]
    text = (f"The OOM says the run needed at least {f['needed_gib']:.2f} GiB of "
            f"{f['capacity_gib']:.2f}; the model predicted {f['predicted_gib']:.2f}")
    if f["shortfall_gib"]:
        return text + f", so every figure here is raised by {f['shortfall_gib']:.2f} GiB."
    return text + " (it saw the failure coming)."


def _fix_dict(fix: Fix, exported: Export | None) -> dict[str, Any]:
    p = fix.plan
    return {"rung": fix.rung, "changes": list(p.changes), "gpu": p.gpu, "gpus": p.n_gpus,
            "layout": p.layout, "micro_batch": p.setup.micro_batch,
            "grad_accum": p.setup.grad_accum, "global_batch": fix.global_batch,
            "device_gib": round(p.device_gib, 3), "capacity_gib": p.capacity_gib,
            "fits": p.fits, "speed": round(fix.speed, 3),
            "throughput_cost": round(1 - fix.speed, 3), "tokens_per_s": round(p.tokens_per_s, 1),
            "host_ram_gib": round(p.host_ram_gib, 1),
            "export": None if exported is None else {
                "format": exported.format, "plan_hash": exported.plan_hash,
                "filename": exported.filename, "text": exported.text,
                "notes": list(exported.notes)}}


def _oom(events: list[RunEvent]) -> RunEvent | None:
    """The run's first device OOM (a host MemoryError is no GPU fix's business)."""
    return next((e for e in events if e.data.get("error") != "MemoryError"), None)


def _gpu(run: RunSummary, oom: RunEvent, name: str | None) -> GPU:
    if name:
        gpu = find(name)
        if gpu is None:
            raise NoFix(f"unknown GPU {name!r}; `headroom size --list-gpus` shows the catalog")
        return gpu
    capacity = oom.data.get("capacity_gib") or run.shape.gpu_mem_gib
    if not capacity:
        gpu = find(run.shape.gpu_model or "")
        if gpu is None:
            raise NoFix(f"run {run.id} recorded neither its GPU nor the OOM's capacity: "
                        "give --gpu NAME")
        return gpu
    return run_gpu(run.shape.gpu_model, float(capacity))


def _export(spec: ModelSpec, fix: Fix, fmt: str) -> tuple[Export | None, str]:
    """The fix in ``fmt``, else as launch lines, with why ``fmt`` could not say it."""
    target = Target.of(spec, fix.plan)
    try:
        return export(target, fmt), ""
    except ExportError as err:
        note = f"{fix.rung}: no {fmt} config ({err}); launch lines instead"
    try:
        return export(target, "launch"), note
    except ExportError as err:
        return None, f"{fix.rung}: {err}"
