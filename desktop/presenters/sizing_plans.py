"""Plans as the wizard shows them: sections by what they change, cells, sort keys, tooltips.

The planner ranks plans by level of change, then cost per token; the table
keeps that order in sections (keeps the experiment, changes the optimizer,
and apart, what fits if the experiment may change), shows each plan's cost in
speed, host RAM and money, and says in a tooltip everything a cell shortens.
The headline is the result page's one sentence: does the run fit as asked,
and what is the best plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.planner import AS_ASKED, Plan
from core.sizing import CardAnswer
from desktop.presenters.formatting import compact, duration, words
from desktop.presenters.memory_bars import Bar
from desktop.presenters.sizing_form import OPTIMIZERS

SECTIONS = ("Plans that keep the experiment", "Plans that change the optimizer",
            "If you can change the experiment")
RANK, GPU, GPUS, NODES, LAYOUT, BATCH, GIB, RATE, SPEED, HOST_RAM, TIME, COST, CHANGES = range(13)
HEADERS = ("#", "GPU", "GPUs", "Nodes", "Layout", "Micro × accum", "GiB/GPU", "Tokens/s", "Speed",
           "Host RAM", "Time", "Cost", "Changes")
NUMERIC = {RANK, GPUS, NODES, BATCH, GIB, RATE, SPEED, HOST_RAM, TIME, COST}
METHOD_NAMES = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA",
                "inference": "inference"}
RECOMPUTES = {"op": "per-op selective"}  # torchtitan's: matmul and attention outputs kept
_OFFLOADS = {"activations offloaded to CPU memory": "activation offload",
             "optimizer state offloaded to CPU memory": "optimizer offload",
             "parameters offloaded to CPU memory": "parameter offload"}
_CHANGE = re.compile(r"(?P<name>[a-z ]+?) (?P<old>\S+) -> (?P<new>\S+)(?: with gradient "
                     r"accumulation (?P<accum>\d+))?")


HEADER_TIPS = {
    SPEED: "Throughput against the same layout as asked: recompute, smaller micro batches and "
           "offload cost speed",
    HOST_RAM: "CPU memory per node that optimizer or parameter offload needs",
    TIME: "How long the token budget takes at the estimated throughput",
    COST: "Rental cost of the token budget at the catalog's price per GPU-hour",
    BATCH: "Micro batch × gradient accumulation per replica (the samples per step are kept)",
}


@dataclass(frozen=True)
class Row:
    """One plan as a table row: what each cell says, sorts by and explains."""

    rank: int  # the planner's order, 1 first
    plan: Plan
    cells: tuple[str, ...]
    keys: tuple[float | str, ...]
    tips: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    title: str
    rows: list[Row]


def sections(plans: list[Plan], tokens: float, card: tuple[str, int] | None = None
             ) -> list[Section]:
    """The plans in sections, in the planner's order; ``card`` (GPU, count) for card mode."""
    titles = list(SECTIONS)
    if card:
        titles[0] = f"Runs on your {card[1]} × {card[0]}"
    grouped: dict[str, list[Row]] = {}
    for rank, p in enumerate(plans, 1):
        title = (f"With more {card[0]} cards" if card and p.level == 0 and p.n_gpus > card[1]
                 else titles[p.level])
        grouped.setdefault(title, []).append(row(rank, p, tokens))
    order = [*titles[:1], *([f"With more {card[0]} cards"] if card else []), *titles[1:]]
    return [Section(t, grouped[t]) for t in order if t in grouped]


def row(rank: int, p: Plan, tokens: float) -> Row:
    s, lay = p.setup, p.setup.layout
    hours, cost = p.hours(tokens), p.cost(tokens)
    short = short_changes(p)
    cells = (str(rank), p.gpu, str(p.n_gpus), str(p.nodes),
             ("⚠ " if p.warnings else "") + short_layout(p), f"{s.micro_batch} × {s.grad_accum}",
             f"{p.device_gib:.1f} of {p.capacity_gib:g}", compact(p.tokens_per_s),
             f"{p.speed:.0%}", f"{p.host_ram_gib:,.0f} GiB" if p.host_ram_gib else "",
             duration(hours * 3600 if hours else None), f"${cost:,.0f}" if cost else "—",
             "; ".join(short) or AS_ASKED)
    keys = (rank, p.gpu, p.n_gpus, p.nodes, p.layout, s.micro_batch + s.grad_accum / 1e6,
            p.device_gib, p.tokens_per_s, p.speed, p.host_ram_gib, hours or float("inf"),
            cost if cost else float("inf"), cells[CHANGES])
    tips = list(cells)
    tips[LAYOUT] = "\n".join([p.layout, *p.warnings])
    tips[BATCH] = (f"micro batch {s.micro_batch} × gradient accumulation {s.grad_accum} × "
                   f"{lay.dp} replica{'s' * (lay.dp > 1)} = {p.global_batch} samples per "
                   f"optimizer step; with these settings the largest micro batch that fits is "
                   f"{p.max_micro_batch:,} and the longest sequence {p.max_seq_len:,}")
    tips[GIB] = (f"{p.device_gib:.1f} GiB per GPU of {p.capacity_gib:g} "
                 f"({p.capacity_gib - p.device_gib:.1f} GiB free)")
    tips[RATE] = f"{p.tokens_per_s:,.0f} tokens/s over all {p.n_gpus} GPUs (an estimate)"
    tips[SPEED] = f"{p.speed:.0%} of the as-asked layout's throughput"
    tips[HOST_RAM] = "No offload: the host's memory is not needed for training state"
    if p.host_ram_gib:
        tips[HOST_RAM] = (f"{p.host_ram_gib:,.0f} GiB of CPU memory per node for the offloaded "
                          f"state; its transfers and the CPU optimizer step add about "
                          f"{p.offload_s_per_step:.1f} s to each optimizer step")
    tips[COST] = (f"${p.usd_per_hour:,.2f} per hour for {p.n_gpus} × {p.gpu} at the catalog's "
                  "rental price" if p.usd_per_hour else "The catalog has no price for this GPU")
    tips[CHANGES] = "\n".join([*p.changes, *p.warnings]) or "Runs as asked"
    return Row(rank, p, cells, keys, tuple(tips))


def short_layout(p: Plan) -> str:
    """The layout without what the GPUs, Nodes and Changes columns say."""
    parts = [x for x in p.layout.split(", ")
             if not re.fullmatch(r"\d+ (GPUs?|nodes)|\w+ offload", x)]
    return ", ".join(parts) or ("single GPU" if p.n_gpus == 1 else "data parallel")


def short_changes(p: Plan) -> list[str]:
    """What the plan changes, first thing first, in a few words each (core says it in full)."""
    method_changed = any(c.startswith("method ") for c in p.changes)
    out = []
    for change in p.changes:
        m = _CHANGE.fullmatch(change.split(" (")[0])
        if change in _OFFLOADS:
            out.append(_OFFLOADS[change])
        elif m is None:
            out.append(change)
        elif m["name"] == "method":
            out.append(f"{METHOD_NAMES[m['new']]} instead of {METHOD_NAMES[m['old']]}")
        elif m["name"] == "optimizer":
            out.append(OPTIMIZERS.get(m["new"], m["new"]))
        elif m["name"] == "micro batch":
            out.append(f"micro batch {m['old']} → {m['new']} (accumulation {m['accum']})")
        elif m["name"] == "seq len":
            out.append(f"sequence {int(m['old']):,} → {int(m['new']):,}")
        elif m["name"] in ("recompute", "loss"):
            out.append(f"{RECOMPUTES.get(m['new'], m['new'])} {m['name']}")
        elif not (m["name"] == "precision" and method_changed):  # the method brings its own
            out.append(f"{m['name']} {m['new']}")
    return out


def plan_phrase(p: Plan, tokens: float) -> str:
    """A plan in a clause: its GPUs, what it changes, its speed, time and cost."""
    nodes = f" on {p.nodes} nodes" if p.nodes > 1 else ""
    changes = short_changes(p)
    what = f"with {words(changes)}" if changes else AS_ASKED
    hours, cost = p.hours(tokens), p.cost(tokens)
    pace = [f"{compact(p.tokens_per_s)} tokens/s"]
    if hours:
        pace.append(f"{duration(hours * 3600)}{f' and ${cost:,.0f}' if cost else ''} for "
                    f"{compact(tokens)} tokens")
    return f"{p.n_gpus} × {p.gpu}{nodes} {what} ({', '.join(pace)})"


def headline(asked: list[Bar], plans: list[Plan], tokens: float, planning: bool,
             budget: int | None) -> str:
    """One sentence: whether the run fits as asked on the GPUs compared, and the best plan.

    With no GPUs compared (Headroom picks them) the sentence names the pick.
    """
    within = f"within {budget} GPUs" if budget else "on any number of these GPUs"
    if not asked:
        if planning:
            return "Looking for the GPUs and layout that fit best…"
        if not plans:
            return f"No GPU in the catalog runs this {within.replace(' these', '')}."
        return f"Headroom's pick: {plan_phrase(plans[0], tokens)}."
    first = _as_asked(asked)
    if planning:
        return f"{first}; looking for plans that fit…"
    if not plans:
        return f"{first}; no plan fits {within}."
    return f"{first}; the best plan: {plan_phrase(plans[0], tokens)}."


def _as_asked(bars: list[Bar]) -> str:
    said: dict[str, list[str]] = {"fits": [], "tight": [], "short": []}
    for b in bars:
        free = b.capacity_gib - b.device_gib
        said[b.verdict].append({
            "fits": f"{_cards(b)} with {free:.1f} GiB free",
            "tight": f"{_cards(b)} ({free:.1f} GiB free, under the {b.margin:.0%} margin)",
            "short": f"{_cards(b)} (short by {-free:.1f} GiB)"}[b.verdict])
    if not said["fits"] and not said["tight"] and len(bars) > 1:  # none fits: the closest
        closest = min(bars, key=lambda b: b.device_gib - b.capacity_gib)
        return (f"As asked it fits none of {words([_cards(b) for b in bars])} (the closest, "
                f"{_cards(closest)}, is short by "
                f"{closest.device_gib - closest.capacity_gib:.1f} GiB)")
    clauses = []
    if said["fits"]:
        clauses.append("fits on " + words(said["fits"]))
    if said["tight"]:
        clauses.append("is tight on " + words(said["tight"]))
    if said["short"]:
        clauses.append(("not on " if clauses else "does not fit on ") + words(said["short"], "or"))
    return "As asked it " + ", ".join(clauses)


def _cards(b: Bar) -> str:
    n = b.check.setup.layout.n_gpus
    return f"{n} × {b.check.gpu.name}" if n > 1 else b.check.gpu.name


def card_headline(answer: CardAnswer | None, tokens: float) -> str:
    """Card mode's one sentence: what the user's cards run, or the smallest change that fits."""
    if answer is None:
        return "Looking for the best setup your cards can run…"
    cards = f"{answer.n_gpus} × {answer.gpu}"
    best = answer.best
    if best:
        changes = short_changes(best)
        how = f"with {words(changes)}" if changes else AS_ASKED
        return (f"{cards} runs it {how}; with those settings the largest micro batch is "
                f"{best.max_micro_batch:,} and the longest sequence {best.max_seq_len:,} tokens "
                f"({compact(best.tokens_per_s)} tokens/s).")
    options = []
    if answer.changes:
        options.append("it fits if you change to " + words(short_changes(answer.changes[0])))
    if answer.more_cards:
        more = answer.more_cards
        options.append(f"it keeps the experiment on {plan_phrase(more, tokens)}")
    if not options:
        return f"{cards} cannot run this, even with a change of method or more cards."
    return f"{cards} cannot keep this experiment; " + "; or ".join(options) + "."
