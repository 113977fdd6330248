"""The work behind ``headroom plan``: read or store the project, link runs, plan, report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.pilot import PilotRun, Proposal
from core.project import ProjectError, load
from core.project_plan import Option, Purchase, StagePlan, VariantPlan
from tracker import projects
from tracker.cli._output import fmt, open_store, print_json, print_table, printable
from tracker.db.engine import default_url
from tracker.store import Store


def plan(args: argparse.Namespace) -> projects.Planned:
    from tracker.cli.plan import is_file

    linking = args.link_pilot or args.link_run or args.unlink
    if args.no_history and (linking or args.save):
        raise ProjectError("--no-history ignores the database: it cannot store or link")
    store = None if args.no_history else _existing_store(args.db, need=bool(
        linking or args.save or not is_file(args.project)))
    if is_file(args.project):
        path = Path(args.project)
        project = load(path)
        stored = projects.stored_as(store, project.name) if store else None
        if args.save or linking:
            stored = projects.save(store, path.read_text(encoding="utf-8"),
                                   str(path.resolve().parent), stored.id if stored else None)
    else:
        stored = projects.find_project(store, args.project)
        project = projects.read(stored.source, stored.base_dir)
    _links(args, store, stored)
    return projects.plan(project, store, stored, history=not args.no_history)


def _existing_store(url: str | None, need: bool) -> Store | None:
    """The database, or None when planning a file and no database exists yet (none is made)."""
    url = url or default_url()
    if not need and url.startswith("sqlite:///") and not Path(url[10:]).exists():
        return None
    return open_store(url)


def _links(args: argparse.Namespace, store: Store | None, stored) -> None:
    for role, pair in (("pilot", args.link_pilot), ("run", args.link_run)):
        if pair:
            variant, stage = projects.link(store, stored, pair[0], _run_id(pair[1]), role,
                                           args.card)
            print(f"linked run {pair[1]} to {variant}/{stage} as its {role}", file=sys.stderr)
    if args.unlink:
        gone = projects.unlink(store, stored, args.unlink[0], _run_id(args.unlink[1]))
        print(f"removed {gone} link{'s' if gone != 1 else ''}", file=sys.stderr)


def _run_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ProjectError(f"a run is given by its id (headroom runs), not {text!r}")
    return int(text)


def list_projects(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    found = projects.projects(store)
    if args.json:
        print_json([{"id": p.id, "name": p.name, "updated": p.updated_at} for p in found])
    else:
        print_table(("id", "project", "updated"),
                    [(p.id, p.name, f"{p.updated_at:%Y-%m-%d %H:%M}") for p in found])
    return 0


def warn(message: str, error: bool = False) -> None:
    label = "error" if error else "note"
    print(f"headroom: {label}: {printable(message)}", file=sys.stderr)


# ---- The report as data (what --json prints; the table is made from it)


def report(planned: projects.Planned, only: str | None = None) -> dict[str, Any]:
    p = planned.plan.project
    variants = [v for v in planned.plan.variants if only in (None, v.name)]
    if only and not variants:
        raise ProjectError(f"no variant {only!r} (variants: "
                           + ", ".join(v.name for v in planned.plan.variants) + ")")
    return {
        "project": p.name, "description": p.description, "stored_id": getattr(
            planned.stored, "id", None),
        "deadline_days": p.deadline_days, "budget_usd": p.budget_usd, "margin": p.margin,
        "pool": [_card(c) for c in p.pool],
        "variants": [_variant(v) for v in variants],
        "errors": [s.error for v in variants for s in v.stages if s.error],
    }


def _card(card) -> dict[str, Any]:
    return {"gpu": card.name, "count": card.count, "owned": card.owned,
            "usd_per_hour": card.gpu.usd_per_hour or None, "price_usd": card.price_usd,
            "memory_gib": card.gpu.memory_gib, "host_ram_gib": card.host_ram_gib}


def _variant(v: VariantPlan) -> dict[str, Any]:
    longest = v.longest
    return {
        "name": v.name, "description": v.variant.description,
        "stages": [_stage(s) for s in v.stages],
        "totals": {
            "hours": _r(v.hours), "days": _r(v.hours / 24), "gpu_hours": _r(v.gpu_hours),
            "gpu_days": _r(v.gpu_hours / 24), "cost": _r(v.cost), "complete": v.complete,
            "longest_stage": {"name": longest.stage.name, "hours": _r(longest.hours)}
            if longest else None,
            "peak_gib_per_gpu": {gpu: {"gib": _r(g), "capacity_gib": c}
                                 for gpu, (g, c) in v.peak_gib.items()},
            "cards": v.cards, "meets_deadline": v.meets_deadline,
            "within_budget": v.within_budget,
        },
        "purchases": [_purchase(p) for p in v.purchases],
    }


def _stage(s: StagePlan) -> dict[str, Any]:
    st = s.stage
    out: dict[str, Any] = {
        "name": st.name, "status": s.status, "model": st.model.label,
        "params": s.spec.total_params if s.spec else None, "method": st.method,
        "framework": st.framework, "tokens": st.total_tokens, "epochs": st.epochs,
        "seq_len": st.seq_len, "global_batch": st.global_batch, "fits": s.plan is not None,
        "error": s.error or None, "would_fit": list(s.would_fit),
    }
    if s.plan is not None:
        out.update(_chosen(s))
    out["options"] = [_option(o, st.total_tokens) for o in s.options]
    out["pilot"] = _proposal(s.pilot) if s.pilot else None
    out["pilot_run"] = _pilot_run(s.pilot_run) if s.pilot_run else None
    return out


def _chosen(s: StagePlan) -> dict[str, Any]:
    p, m, rate = s.plan, s.memory, s.rate
    low, high = s.hours_range
    return {
        "gpu": p.gpu, "gpus": p.n_gpus, "nodes": p.nodes, "layout": p.layout,
        "summary": p.summary, "choice": s.choice, "precision": p.setup.precision,
        "micro_batch": p.setup.micro_batch, "grad_accum": p.setup.grad_accum,
        "gib_per_gpu": _r(p.device_gib), "capacity_gib": p.capacity_gib,
        "memory": {"figure": m.figure, "low_gib": _r(m.low_gib), "high_gib": _r(m.high_gib),
                   "why": m.why},
        "host_ram_gib": _r(p.host_ram_gib) or None,
        "tokens_per_s": _r(p.tokens_per_s),
        "mfu": {"value": _r(rate.mfu), "low": _r(rate.low), "high": _r(rate.high),
                "source": rate.source},
        "hours": _r(s.hours), "hours_low": _r(low), "hours_high": _r(high),
        "gpu_hours": _r(s.gpu_hours), "usd_per_hour": _r(p.usd_per_hour) or None,
        "cost": _r(s.cost), "start_day": _r(s.start_h / 24), "end_day": _r(s.end_h / 24),
        "warnings": list(p.warnings),
    }


def _option(o: Option, tokens: float) -> dict[str, Any]:
    p = o.plan
    hours = p.hours(tokens)
    return {"gpu": p.gpu, "gpus": p.n_gpus, "layout": p.layout, "summary": p.summary,
            "gib_per_gpu": _r(p.device_gib), "tokens_per_s": _r(p.tokens_per_s),
            "hours": _r(hours), "gpu_hours": _r(hours * p.n_gpus if hours else None),
            "cost": _r(p.cost(tokens))}


def _proposal(p: Proposal) -> dict[str, Any]:
    return {"model": p.model, "params": p.params, "gpu": p.gpu, "layout": p.layout,
            "summary": p.summary, "gib_per_gpu": _r(p.gib_per_gpu), "tokens": p.tokens,
            "hours": _r(p.hours), "note": p.note,
            "checks": [{"key": k, "text": t} for k, t in p.checks]}


def _pilot_run(r: PilotRun) -> dict[str, Any]:
    return {"run": r.run_id, "name": r.name, "gpu": r.gpu.name if r.gpu else None,
            "params": r.spec.total_params, "tokens_per_s": _r(r.tokens_per_s),
            "mfu": _r(r.mfu), "memory_recorded": r.memory,
            "checks": [{"key": c.key, "passed": c.passed, "detail": c.detail} for c in r.checks]}


def _purchase(p: Purchase) -> dict[str, Any]:
    return {"gpu": p.gpu, "count": p.count, "owned": p.owned, "first_day": _r(p.first_h / 24),
            "week": p.week, "busy_days": _r(p.busy_h / 24), "gpu_hours": _r(p.gpu_hours),
            "rent_usd": _r(p.rent_usd), "buy_usd": _r(p.buy_usd), "text": p.describe()}


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


# ---- The report for people


def print_report(r: dict[str, Any], pilots: bool) -> None:
    pool = ", ".join(f"{c['count']} × {c['gpu']} ({'owned' if c['owned'] else 'rented'}"
                     + (f", ${c['usd_per_hour']:.2f}/h)" if c["usd_per_hour"] else ")")
                     for c in r["pool"])
    print(f"{r['project']}: pool {pool}" + _limits(r))
    for v in r["variants"]:
        print(f"\n{v['name']}" + (f": {v['description']}" if v["description"] else ""))
        print_table(("stage", "status", "model", "method", "GPUs", "layout", "GiB/GPU", "hours",
                     "GPU-hours", "cost"), [_stage_row(s) for s in v["stages"]])
        for p in v["purchases"]:
            print(f"  {p['text']}; {_money(p)}")
        if pilots:
            _print_pilots(v["stages"])
    if len(r["variants"]) > 1:
        print("\nVariants side by side")
        _side_by_side(r)


def _limits(r: dict[str, Any]) -> str:
    parts = []
    if r["deadline_days"]:
        parts.append(f"deadline {r['deadline_days']:g} days")
    if r["budget_usd"]:
        parts.append(f"budget ${r['budget_usd']:,.0f}")
    return "; " + ", ".join(parts) if parts else ""


def _stage_row(s: dict[str, Any]) -> tuple:
    if not s["fits"]:
        return (s["name"], s["status"], s["model"], s["method"], "-", "fits no pool card", "-",
                "-", "-", "-")
    hours = f"{s['hours']:.1f} ({s['hours_low']:.1f}-{s['hours_high']:.1f})"
    sharding = s["layout"].split(", ", 1)[1] if ", " in s["layout"] else ""
    return (s["name"], s["status"], s["model"], s["method"], f"{s['gpus']} × {s['gpu']}",
            sharding or ("data parallel" if s["gpus"] > 1 else "one GPU"),
            f"{s['gib_per_gpu']:.1f}", hours, f"{s['gpu_hours']:.1f}", _usd(s["cost"]))


def _money(p: dict[str, Any]) -> str:
    buy = f", buying {_usd(p['buy_usd'])}" if p["buy_usd"] is not None else ""
    return f"renting for these stages {_usd(p['rent_usd'])}{buy}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def _print_pilots(stages: list[dict[str, Any]]) -> None:
    for s in stages:
        p = s["pilot"]
        if p:
            print(f"  pilot for {s['name']}: {p['model']} on {p['gpu']} ({p['layout']}), "
                  f"{fmt(p['tokens'] / 1e6)}M tokens in {p['hours']:.1f} h ({p['note']})")
        run = s["pilot_run"]
        if run:
            for c in run["checks"]:
                print(f"    {'pass' if c['passed'] else 'FAIL'} {c['key']}: {c['detail']}")
    if stages and stages[0]["pilot"]:
        print("  every pilot must pass: " + "; ".join(c["text"] for c in stages[0]["pilot"]["checks"]))


def _side_by_side(r: dict[str, Any]) -> None:
    vs = r["variants"]

    def row(label: str, cell) -> tuple:
        return (label, *(cell(v) for v in vs))

    t = [v["totals"] for v in vs]
    rows = [
        row("GPU-days", lambda v: f"{v['totals']['gpu_days']:.1f}"),
        row("cost", lambda v: _usd(v["totals"]["cost"])),
        row("wall-clock days", lambda v: f"{v['totals']['days']:.1f}"),
        row("longest stage", lambda v: _longest(v["totals"]["longest_stage"])),
        row("peak GiB per GPU", lambda v: ", ".join(
            f"{g}: {x['gib']:.1f}/{x['capacity_gib']:g}"
            for g, x in v["totals"]["peak_gib_per_gpu"].items())),
        row("cards needed", lambda v: ", ".join(f"{n} × {g}" for g, n in v["totals"]["cards"].items())),
    ]
    if r["deadline_days"]:
        rows.append(row("meets the deadline", lambda v: _yes(v["totals"]["meets_deadline"])))
    if r["budget_usd"]:
        rows.append(row("within budget", lambda v: _yes(v["totals"]["within_budget"])))
    if not all(x["complete"] for x in t):
        rows.append(row("every stage fits", lambda v: _yes(v["totals"]["complete"])))
    print_table(("", *(v["name"] for v in vs)), rows)


def _longest(stage: dict[str, Any] | None) -> str:
    return f"{stage['name']} ({stage['hours']:.1f} h)" if stage else "-"


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")

