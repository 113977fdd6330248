"""Calibration samples from the store: every run with a shape and a recorded peak or an OOM.

A run gives one sample per memory counter it logged (allocated, reserved,
device), so the fit learns the gaps between them; an OOM gives a lower bound.
Runs the user excluded from the fit, and runs whose shape says too little,
are skipped with the reason kept for ``headroom fit``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.calibration import Calibration, Sample, fit, held_out_fit
from core.gpus import find
from core.memory import SetupError, check
from core.memory.from_shape import ShapeIncomplete, experiment, inputs_from_shape, missing_facts
from core.metrics import MEMORY_COUNTERS
from core.models import ModelError
from tracker.db import runs as run_rows
from tracker.model import RunSummary
from tracker.store import Store

EXCLUDED = "excluded from the fit"
NO_PEAK = "no memory peak or OOM recorded"


@dataclass
class Collected:
    """The samples a store yields, and why the other runs gave none."""

    samples: list[Sample] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)


def collect(store: Store) -> Collected:
    """Calibration samples from every stored run not excluded from the fit."""
    out = Collected()
    excluded = _excluded(store)
    for run in store.runs():
        if run.id in excluded:
            out.skipped[run.id] = EXCLUDED
            continue
        try:
            out.samples.extend(run_samples(store, run))
        except (ShapeIncomplete, SetupError, ModelError) as err:
            out.skipped[run.id] = str(err)
            continue
        if not any(s.run_id == run.id for s in out.samples):
            out.skipped[run.id] = NO_PEAK
    return out


def run_samples(store: Store, run: RunSummary) -> list[Sample]:
    """The samples of one run (raises ShapeIncomplete when its shape says too little)."""
    peaks = {c: run.stat(name, "max") for name, c in MEMORY_COUNTERS.items()}
    peaks = {c: v for c, v in peaks.items() if v is not None and v > 0}
    ooms = store.events(run.id, kinds=["oom"])
    if not peaks and not ooms:
        return []
    missing = missing_facts(run.shape)
    if missing:
        raise ShapeIncomplete(
            f"its log does not say {_listed(missing)}, which "
            f"{'moves' if len(missing) == 1 else 'move'} memory: state "
            f"{'it' if len(missing) == 1 else 'them'} in the run's Details to use the run")
    spec, setup, _ = inputs_from_shape(run.shape)
    check(spec, setup)
    gpu = _gpu_name(run.shape.gpu_model)
    mfu = _mfu(run)
    label = experiment(run.shape)
    samples = [Sample(run.id, spec, setup, gpu, counter, float(peak), None, mfu, run.name, label)
               for counter, peak in peaks.items()]
    for event in ooms[:1]:
        capacity = _capacity(event.data, run, gpu)
        if capacity:
            samples.append(Sample(run.id, spec, setup, gpu, "device", None, capacity, mfu,
                                  run.name, label))
    return samples


_FACT_NAMES = {"method": "the method", "recompute": "whether it recomputed activations",
               "zero_stage": "how it sharded (ZeRO stage or FSDP)",
               "cpu_offload": "whether it offloaded to the CPU"}


def plan_outcomes(store: Store) -> list[dict]:
    """Runs launched from an exported plan: the plan's per-GPU figure beside the run's peak.

    The peak is the counter nearest the plan's device figure (device, else
    reserved, else allocated); ``error`` is predicted / peak - 1. These runs
    are calibration samples like any other; this is how the plans fared.
    """
    out = []
    for run in store.runs():
        link = run.plan_link()
        peaks = [(name, run.stat(name, "max")) for name in _NEAREST_DEVICE]
        found = next(((name, peak) for name, peak in peaks if peak), None)
        if link is None or link["device_gib"] is None or found is None:
            continue
        name, peak = found
        out.append({"run": run.id, "name": run.name, "plan": link["hash"],
                    "predicted_gib": link["device_gib"], "peak_gib": round(peak, 3),
                    "counter": MEMORY_COUNTERS[name], "error": round(link["device_gib"] / peak - 1, 3)})
    return out


_NEAREST_DEVICE = ("mem_used_gib", "mem_reserved_gib", "mem_peak_gib")


def _listed(missing: list[str]) -> str:
    names = [_FACT_NAMES[m] for m in missing]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def calibrate(store: Store, with_errors: bool = True) -> tuple[Calibration, Collected]:
    """Fit the memory model to the store's runs (held-out errors, by experiment, when asked)."""
    collected = collect(store)
    calibration = held_out_fit(collected.samples) if with_errors else fit(collected.samples)
    return calibration, collected


def _excluded(store: Store) -> set[int]:
    with store.session() as s:
        return run_rows.excluded_from_fit(s)


def _gpu_name(model: str | None) -> str:
    if not model:
        return ""
    gpu = find(model)
    return gpu.name if gpu else model.strip()


def _capacity(data: dict, run: RunSummary, gpu: str) -> float | None:
    for key in ("capacity_gib", "total_gib"):
        value = data.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    if run.shape.gpu_mem_gib:
        return float(run.shape.gpu_mem_gib)
    known = find(gpu) if gpu else None
    return known.memory_gib if known else None


def _mfu(run: RunSummary) -> float | None:
    value = run.stat("mfu", "last")  # steady state; nanoGPT logs -100 % while warming up
    if value is None or value <= 0:
        value = run.stat("mfu", "max")
    if value is None or value <= 0:
        return None
    return value / 100 if value > 1 else value
