"""What an export is made from: the model and the one plan the planner chose for it.

A plan's identity is a short hash of what it decides (model, setup, GPU);
its stamp (:mod:`core.plan_stamp`) goes into every exported config.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from core.memory import ModelSpec, Setup
from core.plan_stamp import stamp

if TYPE_CHECKING:
    from core.planner import Plan

HASH_CHARS = 12
DEFAULT_CLIP = 1.0  # gradient clipping is no memory knob: every export uses HF's default


class ExportError(ValueError):
    """A plan the chosen format cannot express; the message is one line for the user."""


@dataclass(frozen=True)
class Target:
    """A model and one plan of it, as the exporters read them."""

    spec: ModelSpec
    setup: Setup
    gpu: str
    device_gib: float  # the per-GPU figure the plan keeps the margin on
    capacity_gib: float
    changes: tuple[str, ...] = ()

    @classmethod
    def of(cls, spec: ModelSpec, plan: Plan) -> Target:
        return cls(spec, plan.setup, plan.gpu, plan.device_gib, plan.capacity_gib, plan.changes)

    @property
    def lay(self):
        return self.setup.layout

    @property
    def plan_hash(self) -> str:
        """Twelve hex digits of SHA-256 over what the plan decides."""
        decided = {"model": self.spec.name, "params": self.spec.total_params, "gpu": self.gpu,
                   "setup": asdict(self.setup)}
        text = json.dumps(decided, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]

    @property
    def stamp(self) -> str:
        return stamp(self.plan_hash, self.device_gib)

    def header(self) -> list[str]:
        """The comment lines every text export starts with."""
        s, lay = self.setup, self.setup.layout
        lines = [
            f"headroom plan {self.stamp}: {self.spec.name}, {s.method} {s.precision}, "
            f"micro batch {s.micro_batch} x accumulation {s.grad_accum} x {lay.dp} replicas "
            f"(global batch {s.global_batch}), sequence {s.seq_len}",
            f"layout: {lay.n_gpus} x {self.gpu}: {lay.describe()}; recompute {s.recompute}, "
            f"loss {s.loss}, optimizer {s.optimizer}",
            f"predicted {self.device_gib:.1f} GiB per GPU of {self.capacity_gib:g} GiB",
        ]
        if self.changes:
            lines.append("changes from what was asked: " + "; ".join(self.changes))
        return lines


@dataclass(frozen=True)
class Export:
    """One exported config: its text, a file name to save it under, and what it leaves to you."""

    format: str
    text: str
    filename: str
    plan_hash: str
    notes: tuple[str, ...] = ()
