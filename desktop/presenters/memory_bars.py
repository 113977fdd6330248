"""The wizard's chart as data: one stacked bar per candidate, on the figure the verdict rests on.

A bar is as tall as the figure the wizard leads with (``Check.device_gib``:
calibrated when history is trusted, else analytical), stacked in the
analytical model's proportions, so bar, verdict and margin never disagree.
Every other figure is a :class:`Marker` beside the bar, named in one line
(:func:`other_figures`). The seed article's rule, keep 15–20 % of the card
free, is the band under each capacity line; its dashed line is the margin the
fit keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.gpus import GPU
from core.memory import COMPONENTS, GIB, Setup
from core.metrics import MARGINS
from core.planner import Plan
from core.sizing import Check, Sizer

SEGMENTS = (*COMPONENTS, "runtime")
LABELS = {"weights": "Weights", "gradients": "Gradients", "optimizer": "Optimizer state",
          "activations": "Activations", "logits": "Logits", "kv_cache": "KV cache",
          "overhead": "Workspaces and buffers", "runtime": "Allocator reserve and CUDA context"}
COLOURS = {"weights": "#4e79a7", "gradients": "#f28e2b", "optimizer": "#e15759",
           "activations": "#59a14f", "logits": "#76b7b2", "kv_cache": "#b07aa1",
           "overhead": "#9c755f", "runtime": "#bab0ac"}
# A figure beside the bar: its pyqtgraph symbol, the legend's glyph for it, colour and name.
MARKERS = {"calibrated": ("d", "◆", "#1f2933", "calibrated on your runs, 90 % interval"),
           "analytical": ("o", "●", "#52606d", "the analytical model")}
LEADS = {"analytical": "the analytical model", "calibrated": "calibrated on your runs"}
MAX_RECOMMENDED = 6  # bars when Headroom picks the GPUs: the best plan on each of a few models


@dataclass(frozen=True)
class Candidate:
    """A setup on a GPU model, as one bar; a plan's own setup stays as planned (``plan``)."""

    label: str
    setup: Setup
    gpu: GPU
    plan: Plan | None = None


@dataclass(frozen=True)
class Marker:
    """A figure the verdict does not rest on, drawn beside the bar (``kind``: a MARKERS key)."""

    kind: str
    gib: float
    low_gib: float | None = None
    high_gib: float | None = None


@dataclass(frozen=True)
class Bar:
    label: str
    check: Check  # the setup on the GPU, with its estimate
    capacity_gib: float
    segments: tuple[tuple[str, float], ...]  # (component, GiB) bottom to top, summing to device
    device_gib: float  # the figure the wizard leads with: bar, verdict and margin rest on it
    markers: tuple[Marker, ...]
    fits: bool
    margin: float
    plan: Plan | None = None

    @property
    def lead(self) -> str:
        return self.check.lead

    @property
    def caption(self) -> str:
        """The label on one line."""
        return self.label.replace("\n", ", ")

    @property
    def band(self) -> tuple[float, float]:
        """Where the free band starts (20 %, or the margin when wider) and the margin's line."""
        limit = self.capacity_gib * (1 - self.margin)
        return min(self.capacity_gib * (1 - max(MARGINS)), limit), limit

    @property
    def verdict(self) -> str:
        """"fits", "tight" (fits, but not with the margin kept free) or "short"."""
        if self.fits:
            return "fits"
        return "tight" if self.device_gib <= self.capacity_gib else "short"

    @property
    def status(self) -> str:
        """The verdict in words, on the leading figure."""
        spare = self.capacity_gib - self.device_gib
        if self.verdict == "short":
            return f"short by {-spare:.1f} GiB"
        return f"{self.verdict}: {spare:.1f} GiB free"


def bar(label: str, check: Check, margin: float, plan: Plan | None = None) -> Bar:
    """The bar of one check: the analytical stack scaled to the leading figure."""
    est = check.estimate
    analytical = est.required / GIB
    scale = check.device_gib / analytical if analytical else 1.0
    parts = [(name, est.breakdown[name] / GIB * scale) for name in COMPONENTS]
    parts.append(("runtime", (est.required - est.allocated) / GIB * scale))
    return Bar(label, check, check.gpu.memory_gib, tuple(parts), check.device_gib,
               _markers(check), check.fits, margin, plan)


def _markers(check: Check) -> tuple[Marker, ...]:
    found = check.calibrated
    if check.lead == "calibrated":
        return (Marker("analytical", check.estimate.required / GIB),)
    if found is None:
        return ()
    return (Marker("calibrated", found.gib, found.low_gib, found.high_gib),)


def bars(sizer: Sizer, candidates: list[Candidate], micro_batch: int | None = None,
         seq_len: int | None = None) -> list[Bar]:
    """The bars for ``candidates``; the what-if batch and sequence apply to the asked ones."""
    changes = {k: v for k, v in (("micro_batch", micro_batch), ("seq_len", seq_len)) if v}
    return [bar(c.label, sizer.check(c.setup.but(**changes) if changes and c.plan is None
                                     else c.setup, c.gpu), sizer.margin, c.plan)
            for c in candidates]


def other_figures(check: Check) -> str:
    """The one line that names the figures the verdict does not rest on ("" when none)."""
    found = check.calibrated
    if found is None:
        return ""
    if check.lead == "calibrated":
        return (f"On {check.gpu.name}, calibrated on your runs leads, trusted ({found.why}); "
                f"the analytical model says {check.estimate.required / GIB:.1f} GiB.")
    return (f"On {check.gpu.name}, calibrated on your runs says {found.gib:.1f} GiB, but it is "
            f"not trusted ({found.why}): the verdicts rest on the analytical model.")


def asked(setup: Setup, gpus: list[GPU]) -> list[Candidate]:
    """The user's setup on each chosen GPU."""
    return [Candidate(f"{g.name}\nas asked\n{_count(setup)}", setup, g) for g in gpus]


def plan_candidate(p: Plan, gpu: GPU, rank: int) -> Candidate:
    """A plan as a bar, named by its rank in the plans table."""
    return Candidate(f"{p.gpu}\nplan {rank}\n{_count(p.setup)}", p.setup, gpu, p)


def _count(setup: Setup) -> str:
    lay = setup.layout
    return f"{lay.n_gpus} GPU{'s' * (lay.n_gpus > 1)}" + (f" on {lay.nodes} nodes"
                                                         * (lay.nodes > 1))


def recommended(plans: list[Plan], gpus: list[GPU]) -> list[Candidate]:
    """When Headroom picks the GPUs: the best plan on each of a few GPU models."""
    by_name = {g.name: g for g in gpus}
    best: dict[str, tuple[int, Plan]] = {}
    for rank, p in enumerate(plans, 1):
        if p.gpu not in best and len(best) < MAX_RECOMMENDED:
            best[p.gpu] = (rank, p)
    return [plan_candidate(p, by_name[p.gpu], rank) for rank, p in best.values()]
