"""Sizing a project: every stage planned on the pool, timed, priced and scheduled; variants totalled.

Each stage is one planner question (:func:`core.planner.plan`) asked on each
card class of the pool, with the pool's count as the budget and the stage's
global batch kept. Of the plans that keep the experiment, owned cards come
first (the article's closing advice: start on the cards you have, move up
only when a stage needs it), then the lowest cost per token; a plan then
spreads over as many of its class's cards as keep 90 % of the per-GPU speed,
which shortens the stage at about the same GPU-hours. Memory is the figure
the planner leads with (the calibrated one when trusted, or the pilot's);
throughput uses the MFU of the stage's pilot on the same card, else the MFU
fitted on the user's runs on that card, else the 40 % default, each with its
interval. Stages run after the ones they wait for and when their cards are
free; the schedule gives the purchase plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.calibration import Calibration
from core.gpus import GPU, catalog
from core.memory import GIB, ModelSpec, Setup, SetupError, check, estimate
from core.models import ModelError, from_config_file, from_params, preset
from core.pilot import PilotRun, Proposal, propose
from core.planner import DEFAULT_MFU, Plan, Predict, fits, plan
from core.project import Card, Project, ProjectError, Stage, Variant, config_path, where
from core.sizing import Sizer, planned_setup
from core.throughput import FULL_SPEED_TOKENS, offload, throughput

# MFU of dense transformer training as published: PaLM 46 %, Megatron-LM (2021) up to 52 %,
# fine-tuning stacks often 25-35 %. The default's interval spans that range.
DEFAULT_MFU_RANGE = (0.25, 0.55)
HISTORY_SPREAD = 0.25  # an MFU fitted on the user's runs on this card, +-25 %
KEEP_SPEED = 0.9  # spread a stage over more cards while each keeps 90 % of its speed
STATUSES = ("planned", "piloted", "running", "done")


@dataclass(frozen=True)
class Rate:
    """The MFU a stage's time rests on, its 90 % range and where it comes from."""

    mfu: float
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class Memory:
    """The per-GPU figure a stage's plan rests on, and which figure it is."""

    gib: float
    figure: str  # "analytical", "calibrated" (trusted) or "pilot"
    low_gib: float | None = None
    high_gib: float | None = None
    why: str = ""


@dataclass(frozen=True)
class Evidence:
    """What the tracker knows beyond the project file: history, pilots, linked runs."""

    calibration: Calibration | None = None
    pilots: Mapping[tuple[str, str], PilotRun] = field(default_factory=dict)
    status: Mapping[tuple[str, str], str] = field(default_factory=dict)
    run_spec: Callable[[int], ModelSpec] | None = None


@dataclass(frozen=True)
class Option:
    """A stage's best plan on one card class, with the figures it rests on."""

    plan: Plan
    rate: Rate
    memory: Memory


@dataclass(frozen=True)
class StagePlan:
    variant: str
    stage: Stage
    spec: ModelSpec | None = None
    option: Option | None = None  # the one chosen
    options: tuple[Option, ...] = ()  # the best on each pool card that holds the stage
    choice: str = ""  # why this card
    would_fit: tuple[str, ...] = ()  # when no pool card holds it: what would make it fit
    error: str = ""  # one line naming the stage and the field
    start_h: float = 0.0
    status: str = "planned"
    pilot: Proposal | None = None
    pilot_run: PilotRun | None = None

    @property
    def plan(self) -> Plan | None:
        return self.option.plan if self.option else None

    @property
    def rate(self) -> Rate | None:
        return self.option.rate if self.option else None

    @property
    def memory(self) -> Memory | None:
        return self.option.memory if self.option else None

    @property
    def hours(self) -> float | None:
        if self.plan is None or self.plan.tokens_per_s <= 0:
            return None
        return self.stage.total_tokens / self.plan.tokens_per_s / 3600

    @property
    def hours_range(self) -> tuple[float, float] | None:
        """Wall-clock hours at the top and bottom of the MFU range."""
        if self.hours is None or self.rate is None:
            return None
        return self.hours * self.rate.mfu / self.rate.high, self.hours * self.rate.mfu / self.rate.low

    @property
    def end_h(self) -> float:
        return self.start_h + (self.hours or 0.0)

    @property
    def gpu_hours(self) -> float | None:
        return self.hours * self.plan.n_gpus if self.hours is not None else None

    @property
    def cost(self) -> float | None:
        """Dollars at the card's $/GPU-hour (None where the price is unknown)."""
        if self.hours is None or not self.plan.usd_per_hour:
            return None
        return self.hours * self.plan.usd_per_hour


@dataclass(frozen=True)
class Purchase:
    """One card class in a variant: when it is first needed, for how long, and what it costs."""

    gpu: str
    count: int  # the most used at once
    owned: bool
    first_h: float
    busy_h: float  # wall-clock hours some stage runs on it
    gpu_hours: float
    rent_usd: float | None  # the stages' GPU-hours at the card's $/GPU-hour
    buy_usd: float | None  # count x purchase price, where the project gives one

    @property
    def week(self) -> int:
        return int(self.first_h // (24 * 7)) + 1

    def describe(self) -> str:
        days = self.busy_h / 24
        if self.owned:
            return f"{self.count}× {self.gpu} (owned) from week {self.week}, busy {days:.1f} days"
        return f"{self.count}× {self.gpu} rented for {days:.1f} days from week {self.week}"


@dataclass(frozen=True)
class VariantPlan:
    variant: Variant
    stages: tuple[StagePlan, ...]
    purchases: tuple[Purchase, ...]
    deadline_days: float | None = None
    budget_usd: float | None = None

    @property
    def name(self) -> str:
        return self.variant.name

    @property
    def hours(self) -> float:
        """Wall-clock hours from the first stage's start to the last one's end."""
        return max((s.end_h for s in self.stages), default=0.0)

    @property
    def gpu_hours(self) -> float:
        return sum(s.gpu_hours or 0.0 for s in self.stages)

    @property
    def cost(self) -> float | None:
        """Dollars for every stage (None while a stage does not fit or a price is unknown)."""
        costs = [s.cost for s in self.stages]
        return sum(costs) if self.complete and None not in costs else None

    @property
    def complete(self) -> bool:
        return all(s.plan is not None for s in self.stages)

    @property
    def longest(self) -> StagePlan | None:
        timed = [s for s in self.stages if s.hours is not None]
        return max(timed, key=lambda s: s.hours) if timed else None

    @property
    def peak_gib(self) -> dict[str, tuple[float, float]]:
        """Per card class: the highest per-GPU figure of its stages, and the card's capacity."""
        out: dict[str, tuple[float, float]] = {}
        for s in (s for s in self.stages if s.plan is not None):
            gib = max(s.plan.device_gib, out.get(s.plan.gpu, (0.0, 0.0))[0])
            out[s.plan.gpu] = (gib, s.plan.capacity_gib)
        return out

    @property
    def cards(self) -> dict[str, int]:
        return {p.gpu: p.count for p in self.purchases}

    @property
    def meets_deadline(self) -> bool | None:
        if self.deadline_days is None or not self.complete:
            return None
        return self.hours / 24 <= self.deadline_days

    @property
    def within_budget(self) -> bool | None:
        if self.budget_usd is None or self.cost is None:
            return None
        return self.cost <= self.budget_usd


@dataclass(frozen=True)
class ProjectPlan:
    project: Project
    variants: tuple[VariantPlan, ...]

    @property
    def errors(self) -> list[str]:
        return [s.error for v in self.variants for s in v.stages if s.error]


def stage_status(links: Iterable[tuple[str, str]]) -> str:
    """planned / piloted / running / done from the (role, run status) of a stage's linked runs.

    A finished run of the stage itself makes it done; any other run of it (running, crashed,
    still to be read to its end) keeps it running; a pilot alone makes it piloted.
    """
    links = list(links)
    own = [status for role, status in links if role == "run"]
    if own:
        return "done" if "finished" in own else "running"
    return "piloted" if links else "planned"


def plan_project(project: Project, evidence: Evidence | None = None) -> ProjectPlan:
    """Every variant's stages planned, scheduled and totalled."""
    evidence = evidence or Evidence()
    variants = []
    for variant in project.variants:
        stages = [plan_stage(project, variant, stage, evidence) for stage in variant.stages]
        stages = meet_deadline(schedule(stages, project.pool), project)
        variants.append(VariantPlan(variant, tuple(stages), purchases(stages, project.pool),
                                    project.deadline_days, project.budget_usd))
    return ProjectPlan(project, tuple(variants))


# ---- One stage


def stage_setup(stage: Stage) -> Setup:
    """The stage as asked: its method and framework's defaults, a micro batch of ~4k tokens."""
    micro = stage.micro_batch or min(stage.global_batch,
                                     max(1, -(-FULL_SPEED_TOKENS // stage.seq_len)))
    return planned_setup(stage.method, stage.framework, precision=stage.precision,
                         optimizer=stage.optimizer, lora_rank=stage.lora_rank, micro_batch=micro,
                         seq_len=stage.seq_len, grad_accum=max(1, stage.global_batch // micro),
                         recompute=stage.recompute, attention=stage.attention)


def resolve_model(stage: Stage, variant: str, base_dir: Path | None,
                  run_spec: Callable[[int], ModelSpec] | None) -> ModelSpec:
    ref = stage.model
    try:
        if ref.kind == "model":
            return preset(str(ref.value))
        if ref.kind == "config":
            return from_config_file(config_path(ref, base_dir), exact=False)
        if ref.kind == "params":
            return from_params(float(ref.value))
        if run_spec is None:
            raise ModelError("a recorded run's shape needs the database (--db)")
        return run_spec(int(ref.value))
    except (ValueError, LookupError) as err:  # an unknown model, a run without a shape
        raise ProjectError(f"{where(variant, stage.name, ref.kind)}: {err}") from None


def plan_stage(project: Project, variant: Variant, stage: Stage, evidence: Evidence) -> StagePlan:
    key = (variant.name, stage.name)
    base = StagePlan(variant.name, stage, status=evidence.status.get(key, "planned"),
                     pilot_run=evidence.pilots.get(key))
    try:
        spec = resolve_model(stage, variant.name, project.base_dir, evidence.run_spec)
        setup = stage_setup(stage)
        check(spec, setup)
    except ProjectError as err:
        return replace(base, error=str(err))
    except SetupError as err:
        return replace(base, error=f"{where(variant.name, stage.name, _field_of(err))}: {err}")
    base = replace(base, spec=spec)
    pilot = base.pilot_run
    sizer = Sizer(spec, evidence.calibration, project.margin)
    predict = _predictor(sizer, setup, pilot)
    rate = lambda gpu: _rate(gpu, spec, pilot, evidence.calibration)  # noqa: E731
    cards = [project.card(stage.gpu)] if stage.gpu else list(project.pool)
    plans = [p for p in (_best_on(spec, setup, stage, c, predict, rate, project.margin)
                         for c in cards) if p is not None]
    options = tuple(Option(p, rate(project.card(p.gpu).gpu), _memory(sizer, spec, setup, p, pilot))
                    for p in plans)
    proposal = propose(spec, setup, stage.total_tokens, project.pool, stage.global_batch,
                       stage.pilot_model, margin=project.margin)
    base = replace(base, options=options, pilot=proposal)
    if not options:
        needs = _would_fit(spec, setup, stage, cards, predict, project.margin)
        pool = ", ".join(f"{c.count} × {c.name}" for c in cards)
        return replace(base, would_fit=tuple(needs), error=(
            f"{where(variant.name, stage.name, 'model')}: {spec.name} {stage.method} fits on no "
            f"pool card ({pool})" + (f": it fits {needs[0]}" if needs else "")))
    owned = {c.name for c in project.pool if c.owned}
    chosen = min(options, key=lambda o: (o.plan.gpu not in owned, _cost_per_token(o.plan)))
    why = ("the stage names its card" if stage.gpu else
           "the cheapest per token of the cards you own" if chosen.plan.gpu in owned else
           "the cheapest per token of the pool")
    return replace(base, option=chosen, choice=why)


def _field_of(err: SetupError) -> str:
    text = str(err).lower()
    for name in ("precision", "optimizer", "lora_rank", "recompute", "attention"):
        if name.replace("_", " ") in text:
            return name
    return "method"


def _predictor(sizer: Sizer, setup: Setup, pilot: PilotRun | None) -> Predict:
    """The trusted calibrated figure, else the analytical one; a stage with a pilot that
    recorded its memory leads with the calibration the pilot joined, however far it
    extrapolates (the interval says how far)."""
    history = sizer.calibration
    if pilot is None or not pilot.memory or history is None:
        return sizer.predictor(setup)

    def predict(spec: ModelSpec, s: Setup, gpu: GPU) -> float:
        found = history.predict(spec, s, gpu.name)
        return found.gib * GIB if found else estimate(spec, s).required

    return predict


def _rate(gpu: GPU, spec: ModelSpec, pilot: PilotRun | None,
          calibration: Calibration | None) -> Rate:
    if pilot is not None and pilot.gpu is not None and pilot.gpu.name == gpu.name and pilot.mfu:
        spread = pilot.rate_spread(spec)
        return Rate(pilot.mfu, pilot.mfu / (1 + spread), pilot.mfu * (1 + spread),
                    f"pilot {pilot.label} on {gpu.name}, "
                    f"{pilot.size_ratio(spec):.3g}× smaller than this stage's model")
    fitted = calibration.mfu(gpu.name) if calibration else None
    if fitted:
        return Rate(fitted, fitted / (1 + HISTORY_SPREAD), fitted * (1 + HISTORY_SPREAD),
                    f"fitted on your runs on {gpu.name}")
    return Rate(DEFAULT_MFU, *DEFAULT_MFU_RANGE, "the default (no run of yours on this card "
                                                 "records its MFU)")


def _best_on(spec: ModelSpec, setup: Setup, stage: Stage, card: Card, predict: Predict,
             rate: Callable[[GPU], Rate], margin: float) -> Plan | None:
    """The cheapest plan per token on this card class that keeps the experiment, spread out."""
    mfu = lambda gpu: rate(gpu).mfu  # noqa: E731
    keeps = [p for p in plan(spec, setup, [card.gpu], card.count, predict, mfu, margin,
                             global_batch=stage.global_batch)
             if p.level == 0 and card.holds_offload(p.host_ram_gib)]
    if not keeps:
        return None
    return _spread(spec, keeps[0], card, stage.global_batch, predict, mfu(card.gpu), margin)


def _spread(spec: ModelSpec, p: Plan, card: Card, global_batch: int, predict: Predict,
            mfu: float, margin: float) -> Plan:
    """``p`` on k times its GPUs (more data parallelism), the fastest that keeps 90 % of the
    per-GPU speed and fits; the global batch stays as asked."""
    best, gpu, per_gpu = p, card.gpu, p.tokens_per_s / p.n_gpus
    for k in range(2, card.count // p.n_gpus + 1):
        n = p.n_gpus * k
        dp = n // p.setup.layout.model_parallel
        if global_batch % dp:
            continue
        per_replica = global_batch // dp
        micro = max(m for m in range(1, min(p.setup.micro_batch, per_replica) + 1)
                    if per_replica % m == 0)
        s = p.setup.but(n_gpus=n, micro_batch=micro, grad_accum=per_replica // micro)
        device = predict(spec, s, gpu)
        speed = throughput(spec, s, gpu, mfu)
        wider = replace(p, setup=s, device_gib=device / GIB, tokens_per_s=speed,
                        usd_per_hour=gpu.usd_per_hour * n,
                        host_ram_gib=offload(spec, s, gpu).host_ram_gib)
        if fits(device, gpu, margin) and speed / n >= KEEP_SPEED * per_gpu \
                and speed > best.tokens_per_s and card.holds_offload(wider.host_ram_gib):
            best = wider
    return best


def _cost_per_token(p: Plan) -> float:
    rate = p.usd_per_hour if p.usd_per_hour else p.n_gpus
    return rate / max(p.tokens_per_s, 1e-9)


def _memory(sizer: Sizer, spec: ModelSpec, setup: Setup, chosen: Plan,
            pilot: PilotRun | None) -> Memory:
    found = sizer.calibration.predict(spec, chosen.setup, chosen.gpu) if sizer.calibration \
        else None
    if found is not None and pilot is not None and pilot.memory:
        return Memory(chosen.device_gib, "pilot", found.low_gib, found.high_gib,
                      f"calibrated with pilot {pilot.label} ({found.group}); the interval "
                      f"widens with the {pilot.size_ratio(spec):.3g}× size ratio")
    if found is not None and found.trusted:
        return Memory(chosen.device_gib, "calibrated", found.low_gib, found.high_gib, found.why)
    reason = sizer.uncalibrated(setup) or (found.why if found else "no recorded run applies")
    if pilot is not None and not pilot.memory:
        reason = f"pilot {pilot.label} recorded no memory peak (a CPU run, or no recorder); {reason}"
    return Memory(chosen.device_gib, "analytical", why=reason)


def _would_fit(spec: ModelSpec, setup: Setup, stage: Stage, cards: list[Card],
               predict: Predict, margin: float) -> list[str]:
    """What would make a stage fit: a change on the pool's cards, more of them, or another card."""
    out = []
    for card in cards:
        changed = [p for p in plan(spec, setup, [card.gpu], card.count, predict, None, margin,
                                   global_batch=stage.global_batch)
                   if p.level > 0 and card.holds_offload(p.host_ram_gib)]
        if changed:
            out.append(f"with {changed[0].summary} on {changed[0].n_gpus} × {card.name}")
    for card in cards:
        more = [p for p in plan(spec, setup, [card.gpu], None, predict, None, margin,
                                global_batch=stage.global_batch)
                if p.level == 0 and card.holds_offload(p.host_ram_gib)]
        if more:
            out.append(f"on {more[0].n_gpus} × {card.name} (the pool has {card.count})")
    pooled = {c.name for c in cards}
    other = [p for p in plan(spec, setup, [g for g in catalog().values() if g.name not in pooled],
                             64, predict, None, margin, global_batch=stage.global_batch)
             if p.level == 0]
    if other:
        out.append(f"on {other[0].n_gpus} × {other[0].gpu} (not in the pool)")
    return out


# ---- Schedule and purchases


def meet_deadline(stages: list[StagePlan], project: Project) -> list[StagePlan]:
    """When the variant misses the deadline, move its longest stages, one at a time, to the
    pool's fastest card for them (the article: move up only when a stage needs it)."""
    if project.deadline_days is None:
        return stages
    limit = project.deadline_days * 24
    longest_first = sorted(range(len(stages)), key=lambda i: stages[i].hours or 0.0,
                           reverse=True)
    for i in longest_first:
        sp = stages[i]
        if max(s.end_h for s in stages) <= limit:
            break
        fastest = max(sp.options, key=lambda o: o.plan.tokens_per_s, default=None)
        if fastest is not None and fastest.plan.tokens_per_s > sp.plan.tokens_per_s:
            moved = replace(sp, option=fastest, choice="the fastest card of the pool: on the "
                            "cheaper one the variant misses the deadline")
            stages = schedule(stages[:i] + [moved] + stages[i + 1:], project.pool)
    return stages


def schedule(stages: list[StagePlan], pool: tuple[Card, ...]) -> list[StagePlan]:
    """Start each stage when the stages it waits for have ended and its cards are free."""
    counts = {c.name: c.count for c in pool}
    ends: dict[str, float] = {}
    busy: dict[str, list[tuple[float, float, int]]] = {}
    out = []
    for i, sp in enumerate(stages):
        after = sp.stage.after if sp.stage.after is not None else (
            (stages[i - 1].stage.name,) if i else ())
        start = max((ends[name] for name in after), default=0.0)
        if sp.plan is not None:
            start = _free_from(busy.setdefault(sp.plan.gpu, []), start, sp.hours or 0.0,
                               sp.plan.n_gpus, counts.get(sp.plan.gpu, sp.plan.n_gpus))
            busy[sp.plan.gpu].append((start, start + (sp.hours or 0.0), sp.plan.n_gpus))
        sp = replace(sp, start_h=start)
        ends[sp.stage.name] = sp.end_h
        out.append(sp)
    return out


def _free_from(intervals: list[tuple[float, float, int]], start: float, hours: float,
               n: int, count: int) -> float:
    """The earliest time from ``start`` when ``n`` cards of ``count`` are free for ``hours``."""
    while True:
        clash = [(a, b, k) for a, b, k in intervals if a < start + hours and b > start]
        if sum(k for *_, k in clash) + n <= count or not clash:
            return start
        start = min(b for _, b, _ in clash)


def purchases(stages: list[StagePlan], pool: tuple[Card, ...]) -> tuple[Purchase, ...]:
    """Per card class used: first needed, busy time, most cards at once, rent vs buy."""
    out = []
    for card in pool:
        used = [s for s in stages if s.plan is not None and s.plan.gpu == card.name]
        if not used:
            continue
        spans = sorted((s.start_h, s.end_h, s.plan.n_gpus) for s in used)
        gpu_hours = sum(s.gpu_hours or 0.0 for s in used)
        rent = gpu_hours * card.gpu.usd_per_hour if card.gpu.usd_per_hour else None
        count = _most_at_once(spans)
        buy = count * card.price_usd if card.price_usd is not None else None
        out.append(Purchase(card.name, count, card.owned, spans[0][0], _union(spans),
                            gpu_hours, rent, buy))
    return tuple(sorted(out, key=lambda p: p.first_h))


def _most_at_once(spans: list[tuple[float, float, int]]) -> int:
    return max(sum(k for a, b, k in spans if a <= t < b or a == b == t) for t, *_ in spans)


def _union(spans: list[tuple[float, float, int]]) -> float:
    total, end = 0.0, -math.inf
    for a, b, _ in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    return total
