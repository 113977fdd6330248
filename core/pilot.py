"""Pilot first (seed article §5.3): a small model of the same family, a few hours, four checks.

Before a stage's big run, the article runs a model of a few hundred million
parameters through the whole pipeline (two hours caught a labelling error a
13B run took a day to reveal). :func:`propose` picks that model and the
token budget the smallest pool card trains in :data:`PILOT_HOURS`;
:func:`run_checks` says whether a recorded pilot passed. A recorded pilot is
also evidence for its stage: its memory peak joins the calibration (same
framework and card, so its coefficients apply) and its throughput gives the
stage's MFU, with an interval that widens with the size ratio between the
stage's model and the pilot's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from core.diagnostics.finding import CRITICAL, WARNING, Finding
from core.gpus import GPU
from core.memory import ModelSpec, Setup
from core.models import Preset, presets
from core.planner import Plan, Predict, analytical, plan
from core.project import Card
from core.throughput import throughput

PILOT_HOURS = 2.0  # §5.3: the 0.5B pilot found the bad labels "in under two hours"
PILOT_TARGET = 0.5e9  # "a model of a few hundred MB"
PILOT_MIN = 0.1e9
PILOT_MAX_SHARE = 0.25  # a pilot is at most a quarter of the stage's model
# The interval on a pilot's throughput: its own scatter (at least 5 %), plus this much per
# doubling of model size between the pilot and the stage. An estimate, stated as such: MFU
# rises with matrix size on GPUs, and CPU pilots are dominated by per-op overhead.
MIN_SPREAD = 0.05
SPREAD_PER_DOUBLING = 0.08

CHECKS = (
    ("loss_falls", "the loss falls: its last tenth averages below its first tenth"),
    ("no_findings", "the diagnostics find nothing of warning severity or worse"),
    ("eval_runs", "evaluation runs: an eval loss is recorded"),
    ("throughput", "the data pipeline keeps up: throughput is recorded and its slowest "
                   "tenth of records runs at least half the median"),
)


@dataclass(frozen=True)
class Proposal:
    """The pilot to run before a stage: which model, where, how many tokens, what to check."""

    model: str
    params: int
    gpu: str
    layout: str
    summary: str  # what the plan changes ("as asked" when nothing)
    gib_per_gpu: float
    tokens: float
    hours: float
    checks: tuple[tuple[str, str], ...] = CHECKS
    note: str = ""


def choose_model(spec: ModelSpec, named: str | None = None) -> tuple[str, ModelSpec, str]:
    """(name, shape, why) of the pilot's model: a small preset of the stage model's family.

    Same architecture type, the vocabulary nearest the stage model's (the same
    tokenizer keeps the data pipeline the one under test), about 0.5B
    parameters and at most a quarter of the stage's model. When the family has
    nothing that small, the stage's own model is the pilot, on fewer tokens.
    """
    if named:
        from core.models import preset

        return named, preset(named), "the stage names its pilot"
    kin = [p for p in presets().values() if p.config.get("model_type") == spec.family
           and PILOT_MIN <= p.n_params <= spec.total_params * PILOT_MAX_SHARE]
    if not kin:
        return spec.name, spec, (f"no preset of the {spec.family} family is a quarter of its "
                                 "size or less: the pilot trains the stage's model on fewer tokens")
    best = min(kin, key=lambda p: (_vocab_gap(p, spec) > 0.05, -_shared_prefix(p.name, spec),
                                   abs(math.log(p.n_params / PILOT_TARGET))))
    return best.name, best.spec(), f"{best.family} family, {best.n_params / 1e9:.2g}B parameters"


def _shared_prefix(name: str, spec: ModelSpec) -> int:
    """How much of its name a preset shares with the stage model's, up to the size ("qwen2.5-")."""
    common = os.path.commonprefix([name, spec.name.lower()])
    return common.rfind("-") + 1


def _vocab_gap(p: Preset, spec: ModelSpec) -> float:
    vocab = p.spec().vocab
    return abs(vocab - spec.vocab) / max(spec.vocab, 1)


def propose(spec: ModelSpec, setup: Setup, total_tokens: float, cards: Iterable[Card],
            global_batch: int, named: str | None = None, predict: Predict = analytical,
            mfu: Callable[[GPU], float] | None = None, margin: float = 0.15) -> Proposal | None:
    """The pilot for a stage on the smallest pool card that holds it (owned cards first):
    one card, or the fewest of that class that do (None: no pool card holds the pilot)."""
    name, small, why = choose_model(spec, named)
    for card in sorted(cards, key=lambda c: (not c.owned, c.gpu.memory_gib, c.gpu.usd_per_hour)):
        keeps = [p for p in plan(small, setup, [card.gpu], card.count, predict, mfu, margin,
                                 global_batch=global_batch)
                 if p.level == 0 and card.holds_offload(p.host_ram_gib)]
        if keeps:
            return _proposal(name, small, keeps[0], total_tokens, why, small is spec)
    return None


def _proposal(name: str, small: ModelSpec, p: Plan, total_tokens: float, why: str,
              same: bool) -> Proposal:
    budget = p.tokens_per_s * PILOT_HOURS * 3600
    if budget >= total_tokens:
        why += (f"; the stage itself takes under {PILOT_HOURS:g} h there: it is its own pilot"
                if same else f"; in {PILOT_HOURS:g} h the pilot sees all of the stage's data")
    tokens = _round_down(min(total_tokens, budget))
    return Proposal(name, small.total_params, p.gpu, p.layout, p.summary, p.device_gib, tokens,
                    tokens / p.tokens_per_s / 3600, CHECKS, why)


def _round_down(tokens: float) -> float:
    """Two significant digits, rounded down: a budget, not a measurement."""
    if tokens <= 0:
        return 0.0
    scale = 10 ** (math.floor(math.log10(tokens)) - 1)
    return math.floor(tokens / scale) * scale


# ---- A recorded pilot


@dataclass(frozen=True)
class CheckResult:
    key: str
    text: str
    passed: bool
    detail: str


def run_checks(loss: np.ndarray, eval_points: int, findings: Sequence[Finding],
               tokens_per_s: np.ndarray) -> tuple[CheckResult, ...]:
    """The four checks on what a pilot recorded (NaN losses count against it)."""
    texts = dict(CHECKS)
    results = [_loss_falls(loss), _no_findings(findings),
               ("eval_runs", eval_points > 0, f"{eval_points} eval loss point"
                + ("s" if eval_points != 1 else "") + " recorded"),
               _steady(tokens_per_s)]
    return tuple(CheckResult(key, texts[key], passed, detail) for key, passed, detail in results)


def _loss_falls(loss: np.ndarray) -> tuple[str, bool, str]:
    loss = np.asarray(loss, dtype=float)
    if loss.size < 4:
        return "loss_falls", False, f"only {loss.size} loss points recorded"
    if not np.all(np.isfinite(loss)):
        return "loss_falls", False, "the loss went NaN or infinite"
    tenth = max(1, loss.size // 10)
    first, last = float(loss[:tenth].mean()), float(loss[-tenth:].mean())
    return "loss_falls", last < first, f"first tenth {first:.4g}, last tenth {last:.4g}"


def _no_findings(findings: Sequence[Finding]) -> tuple[str, bool, str]:
    serious = [f for f in findings if f.severity in (WARNING, CRITICAL)]
    if not serious:
        return "no_findings", True, f"{len(findings)} informational finding(s)"
    return "no_findings", False, "; ".join(f.message for f in serious[:3])


def _steady(tokens_per_s: np.ndarray) -> tuple[str, bool, str]:
    rates = steady_rates(tokens_per_s)
    if rates.size < 2:
        return "throughput", False, "too few throughput records (tokens_per_s)"
    median, slow = float(np.median(rates)), float(np.percentile(rates, 10))
    return ("throughput", slow >= 0.5 * median,
            f"median {median:,.0f} tokens/s, slowest tenth {slow:,.0f}")


def steady_rates(tokens_per_s: np.ndarray) -> np.ndarray:
    """Throughput records past the first (warm-up: compilation, allocator, loader start)."""
    rates = np.asarray(tokens_per_s, dtype=float)
    rates = rates[np.isfinite(rates) & (rates > 0)]
    return rates[1:] if rates.size > 2 else rates


@dataclass(frozen=True)
class PilotRun:
    """A recorded, ingested pilot linked to a stage: what it says about the full stage."""

    run_id: int
    name: str
    spec: ModelSpec
    setup: Setup
    gpu: GPU | None  # the card it ran on, from its shape or the link
    tokens_per_s: float | None  # steady-state median
    spread: float  # relative scatter of its throughput records
    memory: bool  # it recorded a memory peak (the calibration holds it)
    checks: tuple[CheckResult, ...] = ()

    @property
    def label(self) -> str:
        return f"run {self.run_id} ({self.name})"

    @property
    def mfu(self) -> float | None:
        """The model-FLOPs utilisation its recorded throughput implies on its card."""
        if self.gpu is None or not self.tokens_per_s:
            return None
        ideal = throughput(self.spec, self.setup, self.gpu, 1.0)
        return self.tokens_per_s / ideal if ideal > 0 else None

    def size_ratio(self, spec: ModelSpec) -> float:
        return spec.total_params / max(self.spec.total_params, 1)

    def rate_spread(self, spec: ModelSpec) -> float:
        """Relative half-width of the MFU interval for a stage of ``spec``'s size."""
        widen = SPREAD_PER_DOUBLING * abs(math.log2(self.size_ratio(spec)))
        return max(self.spread, MIN_SPREAD) + widen


def throughput_of(rates: np.ndarray) -> tuple[float | None, float]:
    """(steady median tokens/s, relative scatter) of a run's throughput records."""
    steady = steady_rates(rates)
    if steady.size == 0:
        return None, 0.0
    median = float(np.median(steady))
    spread = float(np.std(steady) / median) if steady.size > 1 and median > 0 else 0.0
    return median, spread
