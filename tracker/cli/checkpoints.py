"""``headroom checkpoints RUN``: a run's checkpoints, best and latest, where to resume, retention.

The listing rescans the run's folder first, so it shows the disk as it is now.
``--plan-retention`` only prints what would go; ``--delete --yes`` moves it to
the system trash.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from core.metrics import size_text
from tracker.cli import command_parser
from tracker.cli._output import fail, find_run, open_store, print_json, print_table, printable

LEGEND = ("has: M model (A adapter only), O optimizer, S scheduler, R RNG, G grad scaler, "
          "T trainer state; - missing, ? unknown")
LETTERS = {"model": "M", "optimizer": "O", "scheduler": "S", "rng": "R", "scaler": "G",
           "trainer_state": "T"}


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "checkpoints", parents)
    p.add_argument("run", metavar="RUN", help="run id or name")
    p.add_argument("--metric", metavar="NAME", help="metric that decides the best (default: the "
                   "framework's own, else eval_loss)")
    p.add_argument("--mode", choices=("min", "max"), help="whether lower or higher is better")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.add_argument("--plan-retention", action="store_true",
                   help="show which checkpoints keeping the best K and the latest N would delete")
    p.add_argument("--keep-best", type=int, metavar="K", default=1, help="best checkpoints to keep")
    p.add_argument("--keep-latest", type=int, metavar="N", default=1,
                   help="latest checkpoints to keep")
    p.add_argument("--delete", action="store_true",
                   help="with --plan-retention: move what the plan drops to the system trash")
    p.add_argument("--yes", action="store_true", help="confirm --delete")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.resume import recommend
    from tracker.checkpoints import manager

    if args.delete and not args.plan_retention:
        fail("--delete works only with --plan-retention")
    if args.delete and not args.yes:
        fail("--delete moves checkpoints to the trash: confirm with --yes")
    store = open_store(args.db)
    summary = find_run(store, args.run)
    manager.rescan(store, summary.id)
    if args.plan_retention:
        return _retention(store, summary, args)
    report = manager.report(store, summary.id, args.metric, args.mode)
    from_best = recommend(report.checkpoints, report.choice.metric, report.choice.mode,
                          from_best=True)
    if args.json:
        print_json(_report_dict(summary, report, from_best))
    else:
        _print_report(summary, report)
    return 0


def _retention(store, summary, args) -> int:
    from core.retention import RetentionError
    from tracker.checkpoints import manager

    try:
        report, plan = manager.plan_retention(store, summary.id, args.keep_best, args.keep_latest,
                                              args.metric, args.mode)
    except RetentionError as err:
        fail(str(err))
    done = manager.delete(store, summary.id, plan, confirmed=True) if args.delete else None
    if args.json:
        print_json(_plan_dict(summary, report, plan, done))
    else:
        _print_plan(report, plan, done)
    return 1 if done is not None and done.failed else 0


# JSON


def checkpoint_dict(c, report) -> dict:
    return {
        "step": c.step, "path": c.path, "kind": c.kind, "status": c.status, "has": dict(c.has),
        "weights": c.weights, "complete": c.complete, "size_bytes": c.size_bytes,
        "written_at": _iso(c.written_at), "epoch": c.epoch, "metrics": c.metrics,
        "metric_steps": c.metric_steps, "is_best": c is report.best,
        "is_latest": c is report.latest,
        "named_best": c.named_best, "logged": c.logged, "link_to": c.link_to,
        "warnings": c.warnings, "notes": c.notes,
    }


def resume_dict(resume) -> dict | None:
    if resume is None:
        return None
    return {"path": resume.checkpoint.path, "step": resume.checkpoint.step,
            "kind": resume.checkpoint.kind, "command": resume.command, "reasons": resume.reasons,
            "warnings": resume.warnings}


def _report_dict(summary, report, from_best) -> dict:
    from core.resume import why_none

    origin = report.origin
    return {
        "run": summary.id, "name": summary.name, "metric": report.choice.metric,
        "mode": report.choice.mode, "metric_note": report.choice.note,
        "best": report.best.path if report.best else None,
        "latest": report.latest.path if report.latest else None,
        "resume": resume_dict(report.resume), "resume_from_best": resume_dict(from_best),
        "resume_note": None if report.resume else why_none(report.checkpoints),
        "resumed_from": origin.resumed_from if origin else None,
        "resumed_from_run": origin.parent_run if origin else None,
        "resumed_from_step": origin.parent_step if origin else None,
        "resumed_by_runs": origin.children if origin else [],
        "checkpoints": [checkpoint_dict(c, report) for c in report.checkpoints],
    }


def _plan_dict(summary, report, plan, done) -> dict:
    return {
        "run": summary.id, "metric": report.choice.metric, "mode": report.choice.mode,
        "keep": [{"path": c.path, "step": c.step, "reasons": why} for c, why in plan.keep],
        "delete": [{"path": c.path, "step": c.step, "size_bytes": c.size_bytes}
                   for c in plan.delete],
        "freed_bytes": plan.freed_bytes,
        "deleted": done is not None,
        "trashed": done.trashed if done else [],
        "failed": done.failed if done else {},
    }


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


# Text


def _print_report(summary, report) -> None:
    choice = report.choice
    print(f"run {summary.id} {printable(summary.name)}: {len(report.checkpoints)} checkpoint(s); "
          f"best by {choice.metric or '-'} ({choice.mode or '?'})")
    if choice.note:
        print(f"  note: {choice.note}")
    if report.checkpoints:
        eval_name = choice.metric if choice.metric and choice.metric != "loss" else "eval_loss"
        rows = [_row(c, report, eval_name) for c in report.checkpoints]
        print_table(("step", "kind", "status", "has", "size", "written", "loss", eval_name, "",
                     "path"), rows)
        print(LEGEND)
    _print_resume(report.resume, report.checkpoints)
    if report.origin and report.origin.resumed_from:
        print(f"this run resumed from {printable(report.origin.resumed_from)}")


def _row(c, report, eval_name: str) -> tuple:
    badges = [b for b, on in (("best", c is report.best), ("latest", c is report.latest),
                              ("resume", report.resume and c is report.resume.checkpoint)) if on]
    written = c.written_at.strftime("%Y-%m-%d %H:%M") if c.written_at else None
    return (c.step, c.kind, c.status, _has(c), _size(c.size_bytes), written, c.metrics.get("loss"),
            c.metrics.get(eval_name), " ".join(badges), c.path)


def _has(c) -> str:
    out = ""
    for part, letter in LETTERS.items():
        value = c.has.get(part)
        if part == "model" and value and c.weights == "adapter":
            letter = "A"
        out += letter if value else ("-" if value is False else "?")
    return out


def _size(n: int | None) -> str | None:
    return None if n is None else size_text(n)


def _print_resume(resume, checkpoints) -> None:
    from core.resume import why_none

    if resume is None:
        print(f"resume: {why_none(checkpoints)}")
        return
    print(f"resume from: {printable(resume.checkpoint.path)}")
    for reason in resume.reasons:
        print(f"  because: {printable(reason)}")
    for warning in resume.warnings:
        print(f"  warning: {printable(warning)}")
    print(f"  command: {printable(resume.command)}")


def _print_plan(report, plan, done) -> None:
    print(f"retention by {report.choice.metric} ({report.choice.mode})")
    rows = [("keep", c.step, _size(c.size_bytes), "; ".join(why), c.path) for c, why in plan.keep]
    rows += [("delete", c.step, _size(c.size_bytes), "", c.path) for c in plan.delete]
    print_table(("", "step", "size", "why kept", "path"), rows)
    if done is None:
        print(f"would free {_size(plan.freed_bytes)}. Nothing was deleted: add --delete --yes "
              "to move these to the trash.")
        return
    print(f"moved {len(done.trashed)} checkpoint(s) to the trash, "
          f"freeing {_size(done.freed_bytes)}")
    for path, error in done.failed.items():
        print(f"  not deleted: {printable(path)}: {printable(error)}")
