"""The summary scatter: one point per run on any two fields, coloured by a third, and the memory
model drawn over it.

Axes are field names as queries write them (:mod:`tracker.fields`): shape
fields, config keys, summaries. When x is a setup knob (sequence length,
micro batch, LoRA rank) and y a memory peak, the memory model's curve for
the shape of a selected run is drawn: the analytical figure
(:func:`core.memory.estimate`) and the calibrated one (the user's fit,
through :class:`core.sizing.Sizer`, which uses history only where it
applies). The calibrated figure leads (solid) only when
:func:`core.calibration.trust` trusts its group; otherwise the analytical one
leads and the calibrated one is drawn dashed beside it, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from core.calibration import Calibration
from core.gpus import find
from core.memory import GIB, SetupError, estimate
from core.memory.from_shape import ShapeIncomplete, inputs_from_shape
from core.metrics import MEMORY_COUNTERS
from core.models import ModelError
from core.sizing import Sizer
from tracker.fields import MEMORY_METRICS, Extras, named, shape_kinds
from tracker.model import RunSummary

# Shape fields the memory model varies along x: the field and the Setup attribute it sets.
KNOBS = {"seq_len": "seq_len", "micro_batch": "micro_batch", "lora_rank": "lora_rank"}
# Memory fields on y, and the counter each reads (None: the counter of the run's own peak).
PEAKS: dict[str, str | None] = {"peak_gib": None, "mem_peak_gib.max": "allocated",
                                "mem_reserved_gib.max": "reserved", "mem_used_gib.max": "device"}
SUMMARIES = ("final_loss", "best_eval", "peak_gib", "tokens_per_s", "mfu", "gpu_hours", "steps",
             "min_loss")
NUMERIC_SHAPE = ("seq_len", "micro_batch", "global_batch", "grad_accum", "lora_rank", "n_gpus",
                 "n_params", "n_layers", "hidden", "tp", "pp", "zero_stage")
GRID = 48  # model points between the smallest and largest knob value shown


@dataclass(frozen=True)
class Point:
    run_id: int
    name: str
    x: float
    y: float
    colour_value: object  # the third field's value (None when the run lacks it)
    selected: bool


@dataclass(frozen=True)
class ModelCurves:
    """The memory model along a knob, for one run's shape."""

    run_id: int
    run_name: str
    counter: str
    x: np.ndarray
    analytical: np.ndarray
    calibrated: np.ndarray | None  # None where no recorded run applies
    lead: str  # "calibrated" (trusted) or "analytical"
    why: str  # why the calibrated figure leads or not, in a sentence


@dataclass(frozen=True)
class Scatter:
    x: str
    y: str
    colour: str
    points: list[Point]
    model: ModelCurves | None
    note: str = ""  # why no model curve is drawn, when one could be


def axis_choices(runs: list[RunSummary]) -> list[str]:
    """Fields worth offering on an axis: summaries, then shape fields two runs have numbers for."""
    shape = [f for f in NUMERIC_SHAPE
             if sum(isinstance(getattr(r.shape, f), (int, float)) for r in runs) >= 2]
    memory = [f"{m}.max" for m in MEMORY_METRICS if sum(m in r.series for r in runs) >= 2]
    return [*SUMMARIES, *shape, *memory]


def colour_choices(runs: list[RunSummary]) -> list[str]:
    """Fields to colour by: the axis fields, and the shape's text fields (method, precision...)."""
    text = [f for f, kind in shape_kinds().items() if kind == "text"
            and len({getattr(r.shape, f) for r in runs} - {None}) > 1]
    return ["", *text, "format", *axis_choices(runs)]


def scatter(runs: list[RunSummary], x: str, y: str, colour: str, selected: Iterable[int],
            extras: Mapping[int, Extras] | None = None,
            calibration: Calibration | None = None) -> Scatter:
    """Points of the runs that have numbers for both axes, and the model's curves when they apply."""
    extras = extras or {}
    fx, fy = named(x), named(y)
    fc = named(colour) if colour else None
    chosen = set(selected)
    points = []
    for run in runs:
        more = extras.get(run.id)
        vx, vy = _number(fx.value(run, more)), _number(fy.value(run, more))
        if vx is None or vy is None:
            continue
        c = fc.value(run, more) if fc else None
        points.append(Point(run.id, run.name, vx, vy, c, run.id in chosen))
    model, note = None, ""
    if x in KNOBS and y in PEAKS:
        model, note = _model_for(runs, selected, x, y, [p.x for p in points], calibration)
    return Scatter(x, y, colour, points, model, note)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _model_for(runs: list[RunSummary], selected: Iterable[int], knob: str, y: str,
               xs: list[float], calibration: Calibration | None) -> tuple[ModelCurves | None, str]:
    """The curves for the last selected run whose shape the model can use."""
    by_id = {r.id: r for r in runs}
    reasons = []
    for run_id in reversed(list(selected)):
        run = by_id.get(run_id)
        if run is None:
            continue
        try:
            return model_curves(run, knob, y, xs, calibration), ""
        except (ShapeIncomplete, SetupError, ModelError, ValueError) as err:
            reasons.append(f"{run.name}: {err}")
    if reasons:
        return None, "No model curve — " + reasons[0]
    return None, "Select a run to draw the memory model for its shape along this axis."


def model_curves(run: RunSummary, knob: str, y: str, xs: Iterable[float],
                 calibration: Calibration | None = None) -> ModelCurves:
    """The model's reading (the counter ``y`` records) along ``knob`` for ``run``'s shape.

    The curve is evaluated on a grid between the smallest and largest knob
    value shown and at every plotted value itself, so it passes through the
    model's exact figure at each point.
    """
    spec, setup, defaulted = inputs_from_shape(run.shape)
    if knob == "lora_rank" and setup.method not in ("lora", "qlora"):
        raise ValueError(f"its method is {setup.method}: a LoRA rank does not apply")
    counter = PEAKS[y] or _peak_counter(run)
    grid = knob_grid([*xs, getattr(setup, KNOBS[knob])])
    sizer = Sizer(spec, calibration)
    gpu = _gpu(run)
    analytical, calibrated, trusted = [], [], []
    for value in grid:
        s = replace(setup, **{KNOBS[knob]: int(value)})
        analytical.append(estimate(spec, s).reading(counter) / GIB)
        history = sizer.history(s)
        found = history.predict(spec, s, gpu, counter) if history else None
        calibrated.append(found.gib if found else math.nan)
        trusted.append(found is not None and found.trusted)
    at_run = sizer.history(setup)
    own = at_run.predict(spec, setup, gpu, counter) if at_run else None
    lead = "calibrated" if own is not None and own.trusted else "analytical"
    why = own.why if own is not None else (sizer.uncalibrated(setup) or "no calibration group applies")
    if knob in defaulted:
        why += f"; its log does not state {knob} ({getattr(setup, KNOBS[knob])} assumed)"
    cal = np.array(calibrated)
    return ModelCurves(run.id, run.name, counter, grid, np.array(analytical),
                       None if np.isnan(cal).all() else cal, lead, why)


def knob_grid(values: Iterable[float]) -> np.ndarray:
    """Whole knob values: an even grid over their range, plus each value itself."""
    whole = sorted({int(round(v)) for v in values if v is not None and v >= 1})
    if not whole:
        return np.array([], dtype=float)
    low, high = whole[0], whole[-1]
    grid = np.unique(np.round(np.linspace(low, high, GRID)).astype(int))
    return np.union1d(grid, whole).astype(float)


def _peak_counter(run: RunSummary) -> str:
    """The counter of the metric ``peak_gib`` reads for this run (allocated when none)."""
    return next((MEMORY_COUNTERS[m] for m in MEMORY_METRICS if run.stat(m, "max") is not None),
                "allocated")


def _gpu(run: RunSummary) -> str:
    known = find(run.shape.gpu_model) if run.shape.gpu_model else None
    return known.name if known else (run.shape.gpu_model or "")
