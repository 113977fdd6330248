"""Sizing a planned run: the analytical estimate, the calibrated figure, per-GPU fits and plans.

The glue ``headroom size`` and the desktop wizard share, so both show the same
figures for the same choices. A :class:`Sizer` holds one model and the user's
calibration and answers many what-ifs cheaply: the wizard's sliders call
:meth:`Sizer.check` on every move.

History counts only where it is relevant: a recorded run of the same kind
(training or inference) within 3x the model's parameters. Otherwise every
figure is the analytical one, and :meth:`Sizer.uncalibrated` says why in a
sentence the user can read. Where history applies, its figure leads only when
it is trusted (:func:`core.calibration.trust`); otherwise the analytical
figure leads and the calibrated one is shown beside it as a hint, with why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.calibration import Calibrated, Calibration
from core.gpus import GPU
from core.memory import GIB, Estimate, Layout, ModelSpec, Setup, estimate, frameworks
from core.planner import DEFAULT_MFU, MARGIN, Fit, Plan, Predict, check_fit, fits, plan, plans_on

DEFAULT_PRECISION = {"full": "mixed-bf16", "lora": "mixed-bf16", "qlora": "nf4",
                     "inference": "bf16"}
NEAR = 3.0  # a recorded run this many times smaller or larger still informs the fit


def default_precision(method: str) -> str:
    return DEFAULT_PRECISION[method]


def default_optimizer(method: str) -> str:
    return "none" if method == "inference" else "adamw"


def planned_setup(method: str, framework: str = "hf", layout: Layout | None = None,
                  **stated: Any) -> Setup:
    """A Setup from what the user stated; the framework's defaults fill the rest, then ours.

    ``stated`` holds Setup fields the user gave (None values count as unsaid).
    A preset never sets what would contradict a stated field: torchtune's
    optimizer-in-backward yields to stated gradient accumulation.
    """
    layout = layout or Layout()
    stated = {k: v for k, v in stated.items() if v is not None}
    preset = frameworks.framework(framework)
    fields: dict[str, Any] = {"precision": default_precision(method),
                              "optimizer": default_optimizer(method)}
    if method != "inference":
        fields.update(preset.setup_fields(method, layout.n_gpus))
        if method == "qlora":
            fields["precision"] = default_precision(method)
        if stated.get("grad_accum", 1) > 1 or layout.offload_optimizer:
            fields.pop("optimizer_in_backward", None)
    fields.update(stated)
    return Setup(method=method, framework=preset.name, layout=layout, **fields)


@dataclass(frozen=True)
class Check:
    """One setup on one GPU model: the analytical breakdown and what the fit decides on."""

    gpu: GPU
    setup: Setup
    estimate: Estimate
    device_gib: float  # the figure the verdict rests on (see ``lead``)
    calibrated: Calibrated | None
    fits: bool  # with the margin kept free
    lead: str = "analytical"  # which figure leads: "calibrated" (trusted) or "analytical"


class Sizer:
    """A model and the user's calibration, ready for many setups and GPUs."""

    def __init__(self, spec: ModelSpec, calibration: Calibration | None = None,
                 margin: float = MARGIN) -> None:
        self.spec = spec
        self.calibration = calibration if calibration and calibration.samples else None
        self.margin = margin
        self._reasons: dict[bool, str] = {}

    def uncalibrated(self, setup: Setup) -> str:
        """Why the figures for ``setup`` are analytical ("" when history applies)."""
        if setup.training not in self._reasons:
            self._reasons[setup.training] = self._reason(setup.training)
        return self._reasons[setup.training]

    def _reason(self, training: bool) -> str:
        if self.calibration is None:
            return ("no recorded run has both a shape and a memory peak yet: "
                    "figure is uncalibrated")
        kind = [s for s in self.calibration.samples if s.setup.training == training]
        if not kind:
            what = "training" if training else "inference"
            return f"no recorded {what} run: figure is uncalibrated"
        size = self.spec.total_params
        ratio = lambda s: abs(math.log(s.spec.total_params / size))  # noqa: E731
        nearest = min(kind, key=ratio)
        if ratio(nearest) <= math.log(NEAR):
            return ""
        name = nearest.name or f"run {nearest.run_id}"
        return (f"no recorded run within {NEAR:g}× this size (nearest: {name}, "
                f"{nearest.spec.total_params / 1e9:.3g}B parameters): figure is uncalibrated")

    def history(self, setup: Setup) -> Calibration | None:
        """The calibration when it applies to ``setup``, else None."""
        return None if self.uncalibrated(setup) else self.calibration

    def calibrated(self, setup: Setup, gpu: str = "") -> Calibrated | None:
        """The calibrated device reading with its interval and the runs behind it."""
        history = self.history(setup)
        return history.predict(self.spec, setup, gpu) if history else None

    def predictor(self, setup: Setup) -> Predict:
        """Device bytes for the planner: the trusted calibrated figure, else the analytical one."""
        history = self.history(setup)
        if history is None:
            return lambda spec, s, gpu: estimate(spec, s).required

        def predict(spec: ModelSpec, s: Setup, gpu: GPU) -> float:
            found = history.predict(spec, s, gpu.name)
            return found.gib * GIB if found and found.trusted else estimate(spec, s).required

        return predict

    def check(self, setup: Setup, gpu: GPU) -> Check:
        """The breakdown of ``setup`` and whether it fits ``gpu`` (fast: one or two estimates)."""
        est = estimate(self.spec, setup)
        calibrated = self.calibrated(setup, gpu.name)
        lead = "calibrated" if calibrated and calibrated.trusted else "analytical"
        device = calibrated.gib * GIB if lead == "calibrated" else est.required
        return Check(gpu, setup, est, device / GIB, calibrated, fits(device, gpu, self.margin),
                     lead)

    def fit(self, setup: Setup, gpu: GPU) -> Fit:
        """Whether ``setup`` fits ``gpu`` and the largest micro batch that would."""
        return check_fit(self.spec, setup, gpu, self.predictor(setup), self.margin)

    def plans(self, setup: Setup, gpus: Iterable[GPU], max_gpus: int | None = None,
              global_batch: int | None = None) -> list[Plan]:
        """Layouts that fit, ranked (the planner with the figure that leads)."""
        history = self.calibration
        mfu = (lambda g: history.mfu(g.name) or DEFAULT_MFU) if history else None
        return plan(self.spec, setup, gpus, max_gpus, self.predictor(setup), mfu, self.margin,
                    global_batch=global_batch)

    def plans_on(self, setup: Setup, gpu: GPU, n_gpus: int,
                 global_batch: int | None = None) -> list[Plan]:
        """The fastest plan at each level of change on exactly ``n_gpus`` of ``gpu``."""
        history = self.calibration
        mfu = (lambda g: history.mfu(g.name) or DEFAULT_MFU) if history else None
        return plans_on(self.spec, setup, gpu, n_gpus, self.predictor(setup), mfu, self.margin,
                        global_batch)

    def fit_to_card(self, setup: Setup, gpu: GPU, n_gpus: int = 1,
                    global_batch: int | None = None) -> CardAnswer:
        """What the user's cards can run: the best way to fit, or the smallest change that does.

        The cards the user has come first: a plan on all ``n_gpus`` of them,
        else the planner's fewest that keep the experiment.
        """
        on_cards = self.plans(setup, [gpu], n_gpus, global_batch)
        keeps = [p for p in self.plans_on(setup, gpu, n_gpus, global_batch) if p.level == 0]
        keeps += [p for p in on_cards if p.level == 0]
        if keeps:
            return CardAnswer(gpu.name, n_gpus, keeps[0], [], None)
        more = next((p for p in self.plans(setup, [gpu], None, global_batch)
                     if p.level == 0 and p.n_gpus > n_gpus), None)
        return CardAnswer(gpu.name, n_gpus, None, [p for p in on_cards if p.level > 0], more)


@dataclass(frozen=True)
class CardAnswer:
    """``headroom size --fit-to-card``: the best setup on the user's cards, or what would fit."""

    gpu: str
    n_gpus: int
    best: Plan | None  # keeps the experiment on these cards (None: nothing does)
    changes: list[Plan]  # otherwise: what fits by changing the optimizer or the experiment
    more_cards: Plan | None  # otherwise: the fewest cards of this model that keep it

    @property
    def fits(self) -> bool:
        return self.best is not None


def training_seconds(tokens: float, tokens_per_s: float) -> float | None:
    """How long ``tokens`` take at a plan's throughput (None when it has none)."""
    return tokens / tokens_per_s if tokens_per_s > 0 else None
