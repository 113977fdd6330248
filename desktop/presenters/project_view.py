"""The Project view in words: variants side by side, each variant's stages, a stage's story.

Qt-free, so the window, the exported report and the tests read the same
cells. The figures are the ones ``headroom plan`` prints: both come from
:func:`tracker.projects.plan`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime

from core import __version__
from core.project_plan import ProjectPlan, StagePlan, VariantPlan
from desktop.presenters.formatting import MISSING, compact

STATUS_COLOURS = {"planned": "#616e7c", "piloted": "#1f6feb", "running": "#b26a00",
                  "done": "#2f7d32"}
VERDICT_COLOURS = {True: "#2f7d32", False: "#b3261e"}
COMPARISON = ("GPU-days", "Cost", "Wall-clock", "Longest stage", "Peak GiB per GPU",
              "Cards needed", "Cards over time", "Meets the deadline", "Within budget")
STAGE_HEADERS = ("Stage", "Status", "Model", "Method", "GPUs", "Layout", "GiB per GPU",
                 "Hours", "GPU-hours", "Cost", "Starts", "Memory figure", "MFU")
CHART_ALT = "Per stage: memory per GPU against the card, and when each stage runs"


CARD_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#e45756")


@dataclass(frozen=True)
class ChartStage:
    """One stage as the charts draw it: a memory bar against its card, and a span in time."""

    label: str
    card: str
    gib: float
    capacity_gib: float
    start_days: float
    end_days: float


def chart_stages(variants: list[VariantPlan]) -> list[ChartStage]:
    """The planned stages of ``variants`` (their names prefixed when there are several)."""
    prefix = len(variants) > 1
    return [ChartStage(f"{v.name}: {s.stage.name}" if prefix else s.stage.name, s.plan.gpu,
                       s.plan.device_gib, s.plan.capacity_gib, s.start_h / 24, s.end_h / 24)
            for v in variants for s in v.stages if s.plan is not None]


def card_colours(stages: list[ChartStage]) -> dict[str, str]:
    cards = list(dict.fromkeys(s.card for s in stages))
    return {card: CARD_COLOURS[i % len(CARD_COLOURS)] for i, card in enumerate(cards)}


def money(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"${value:,.0f}" if value >= 10 else f"${value:,.2f}"


def days(hours: float | None) -> str:
    if hours is None:
        return MISSING
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h"


def verdict(value: bool | None) -> str:
    return MISSING if value is None else ("yes" if value else "no")


def comparison(plan: ProjectPlan) -> list[tuple[str, ...]]:
    """One row per measure, one column per variant (after the measure's name)."""
    out = []
    for label in COMPARISON:
        out.append((label, *(_measure(v, label) for v in plan.variants)))
    return out


def _measure(v: VariantPlan, label: str) -> str:
    longest = v.longest
    values = {
        "GPU-days": f"{v.gpu_hours / 24:.1f}",
        "Cost": money(v.cost) if v.complete else "a stage does not fit",
        "Wall-clock": days(v.hours),
        "Longest stage": f"{longest.stage.name} ({days(longest.hours)})" if longest else MISSING,
        "Peak GiB per GPU": ", ".join(f"{g}: {gib:.1f} of {cap:g}"
                                      for g, (gib, cap) in v.peak_gib.items()) or MISSING,
        "Cards needed": ", ".join(f"{n} × {g}" for g, n in v.cards.items()) or MISSING,
        "Cards over time": "; ".join(p.describe() for p in v.purchases) or MISSING,
        "Meets the deadline": verdict(v.meets_deadline),
        "Within budget": verdict(v.within_budget),
    }
    return values[label]


def stage_rows(v: VariantPlan) -> list[tuple[str, ...]]:
    return [stage_row(s) for s in v.stages]


def stage_row(s: StagePlan) -> tuple[str, ...]:
    st = s.stage
    head = (st.name, s.status, st.model.label, st.method)
    if s.plan is None:
        return (*head, MISSING, "fits no pool card", *([MISSING] * 7))
    p = s.plan
    low, high = s.hours_range
    return (*head, f"{p.n_gpus} × {p.gpu}", p.layout.partition(", ")[2] or (
        "data parallel" if p.n_gpus > 1 else "one GPU"),
        f"{p.device_gib:.1f} of {p.capacity_gib:g}", f"{s.hours:.1f} ({low:.1f}–{high:.1f})",
        f"{s.gpu_hours:.1f}", money(s.cost), f"day {s.start_h / 24:.1f}", s.memory.figure,
        f"{s.rate.mfu:.0%}")


def stage_html(s: StagePlan, links: list[tuple[str, int, str, str]]) -> str:
    """A stage's story: its plan and why, its pilot, the runs linked to it.

    ``links``: (role, run id, run name, run status) of the runs linked to it.
    """
    st = s.stage
    colour = STATUS_COLOURS.get(s.status, "#616e7c")
    parts = [f"<p><b>{_e(st.name)}</b> <span style='color:{colour}'>● {_e(s.status)}</span>"
             f" — {_e(st.model.label)}, {_e(st.method)}, {compact(st.total_tokens)} tokens "
             f"({st.epochs:g} epoch{'s' if st.epochs != 1 else ''}), sequence {st.seq_len:,}, "
             f"global batch {st.global_batch}</p>"]
    if s.error:
        parts.append(f"<p style='color:#b3261e'>{_e(s.error)}</p>")
        parts += [f"<li>It fits {_e(w)}</li>" for w in s.would_fit]
    if s.plan is not None:
        parts.append(_plan_html(s))
    if s.pilot is not None:
        p = s.pilot
        checks = "".join(f"<li>{_e(text)}</li>" for _, text in p.checks)
        parts.append(f"<p><b>Pilot first</b>: {_e(p.model)} on {_e(p.gpu)} ({_e(p.layout)}), "
                     f"{compact(p.tokens)} tokens in {p.hours:.1f} h — {_e(p.note)}. It must "
                     f"pass:</p><ul>{checks}</ul>")
    if s.pilot_run is not None:
        rows = "".join(f"<li><span style='color:{VERDICT_COLOURS[c.passed]}'>"
                       f"{'pass' if c.passed else 'fail'}</span> {_e(c.key)}: {_e(c.detail)}</li>"
                       for c in s.pilot_run.checks)
        parts.append(f"<p><b>Pilot {_e(s.pilot_run.label)}</b>:</p><ul>{rows}</ul>")
    if links:
        items = "".join(f"<li>{_e(role)}: <a href='run:{i}'>{_e(name)}</a> ({_e(status)})</li>"
                        for role, i, name, status in links)
        parts.append(f"<p><b>Linked runs</b></p><ul>{items}</ul>")
    return "".join(parts)


def _plan_html(s: StagePlan) -> str:
    p, m, r = s.plan, s.memory, s.rate
    interval = (f" (90 % interval {m.low_gib:.1f}–{m.high_gib:.1f})"
                if m.low_gib is not None else "")
    low, high = s.hours_range
    return (f"<p><b>{p.n_gpus} × {_e(p.gpu)}</b>, {_e(p.layout)}: {_e(p.summary)}. "
            f"Chosen as {_e(s.choice)}.</p>"
            f"<p>Memory per GPU {p.device_gib:.1f} of {p.capacity_gib:g} GiB{interval}, "
            f"{_e(m.figure)}: {_e(m.why)}</p>"
            f"<p>{compact(p.tokens_per_s)} tokens/s at {r.mfu:.0%} MFU ({r.low:.0%}–{r.high:.0%},"
            f" {_e(r.source)}): {s.hours:.1f} h ({low:.1f}–{high:.1f}), {s.gpu_hours:.1f} "
            f"GPU-hours, {money(s.cost)}.</p>")


def _e(text: str) -> str:
    return html.escape(str(text))


def blocks(plan: ProjectPlan) -> list[tuple]:
    """The project as report blocks (the sizing report's kinds: h1, h2, p, list, table, image)."""
    p = plan.project
    limits = [f"deadline {p.deadline_days:g} days"] if p.deadline_days else []
    limits += [f"budget {money(p.budget_usd)}"] if p.budget_usd else []
    pool = ", ".join(f"{c.count} × {c.name} ({'owned' if c.owned else 'rented'}, "
                     f"{money(c.gpu.usd_per_hour)}/GPU-hour)" for c in p.pool)
    out: list[tuple] = [
        ("h1", f"Project: {p.name}"),
        ("p", f"Headroom {__version__}, {datetime.now():%Y-%m-%d %H:%M}"),
        ("table", ("", ""), [("About", p.description or MISSING), ("Pool", pool),
                             ("Limits", ", ".join(limits) or MISSING)]),
        ("h2", "Variants side by side"),
        ("table", ("", *(v.name for v in plan.variants)), comparison(plan)),
        ("image", CHART_ALT),
    ]
    for v in plan.variants:
        out += [("h2", v.name), ("p", v.variant.description or "")]
        out.append(("table", STAGE_HEADERS, stage_rows(v)))
        out.append(("list", [f"{s.stage.name}: pilot {s.pilot.model} on {s.pilot.gpu}, "
                             f"{compact(s.pilot.tokens)} tokens in {s.pilot.hours:.1f} h"
                             for s in v.stages if s.pilot] + [s.error for s in v.stages
                                                              if s.error]))
    if plan.variants and plan.variants[0].stages and plan.variants[0].stages[0].pilot:
        checks = plan.variants[0].stages[0].pilot.checks
        out += [("h2", "Every pilot must pass"), ("list", [text for _, text in checks])]
    return out
