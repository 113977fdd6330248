"""The wizard's chart as data: one stacked bar per candidate GPU against its capacity.

A bar stacks the analytical components up to the device reading (what
``nvidia-smi`` shows, and what must fit); the calibrated figure and its
interval sit beside it when the user's history applies. The seed article's
rule, keep 15–20 % of the card free, is the band under each capacity line.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.calibration import Calibrated
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
MAX_RECOMMENDED = 6  # bars when Headroom picks the GPUs: the best plan on each of a few models


@dataclass(frozen=True)
class Candidate:
    """A setup on a GPU model, as one bar."""

    label: str
    setup: Setup
    gpu: GPU


@dataclass(frozen=True)
class Bar:
    label: str
    check: Check  # the setup on the GPU, with its estimate
    capacity_gib: float
    segments: tuple[tuple[str, float], ...]  # (component, GiB) bottom to top: the analytical
    device_gib: float  # what the fit decides on: calibrated where history applies
    calibrated: Calibrated | None
    fits: bool

    @property
    def band(self) -> tuple[float, float]:
        """Where the free margin starts, at 20 % and at 15 % (the fit's own margin)."""
        return tuple(self.capacity_gib / (1 + m) for m in sorted(MARGINS, reverse=True))

    @property
    def verdict(self) -> str:
        """"fits", "tight" (fits, but not with the margin kept free) or "short"."""
        if self.fits:
            return "fits"
        return "tight" if self.device_gib <= self.capacity_gib else "short"

    @property
    def status(self) -> str:
        """The verdict in words, on the figure it rests on (calibrated when there is one)."""
        spare = self.capacity_gib - self.device_gib
        if self.verdict == "short":
            return f"short by {-spare:.1f} GiB"
        return f"{self.verdict}: {spare:.1f} GiB free"


def bar(label: str, check: Check) -> Bar:
    est = check.estimate
    parts = [(name, est.breakdown[name] / GIB) for name in COMPONENTS]
    parts.append(("runtime", (est.device - est.allocated) / GIB))
    return Bar(label, check, check.gpu.memory_gib, tuple(parts), check.device_gib,
               check.calibrated, check.fits)


def bars(sizer: Sizer, candidates: list[Candidate], micro_batch: int | None = None,
         seq_len: int | None = None) -> list[Bar]:
    """The bars for ``candidates``, each with the what-if batch and sequence when given."""
    changes = {k: v for k, v in (("micro_batch", micro_batch), ("seq_len", seq_len)) if v}
    return [bar(c.label, sizer.check(c.setup.but(**changes) if changes else c.setup, c.gpu))
            for c in candidates]


def candidates(setup: Setup, gpus: list[GPU], plans: list[Plan] | None,
               recommend: bool) -> list[Candidate]:
    """The user's setup on each chosen GPU; or, when Headroom recommends, its best plans."""
    if not recommend:
        return [Candidate(g.name, setup, g) for g in gpus]
    by_name = {g.name: g for g in gpus}
    best: dict[str, Plan] = {}
    for p in plans or []:
        if p.gpu not in best and len(best) < MAX_RECOMMENDED:
            best[p.gpu] = p
    return [Candidate(f"{p.gpu}\n{p.layout}", p.setup, by_name[p.gpu]) for p in best.values()]
