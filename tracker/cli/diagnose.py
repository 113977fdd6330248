"""``headroom diagnose RUN | --all``: what went wrong in a run, why, and what to do."""

from __future__ import annotations

import argparse

from tracker.cli import command_parser
from tracker.cli._output import fail, find_run, open_store, print_json, print_table


def add_parser(sub, parents) -> None:
    p = command_parser(
        sub, "diagnose", parents,
        description="Show what the diagnostics found in a run (or every run): the kind, "
                    "severity, steps, what happened, the likely cause, the remedy and the "
                    "evidence numbers.")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("run", nargs="?", metavar="RUN", help="run id or name")
    target.add_argument("--all", action="store_true", help="every stored run")
    p.add_argument("--rerun", action="store_true",
                   help="run the diagnostics again first (after an upgrade or a shape correction)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.diagnostics import title

    store = open_store(args.db)
    if args.all:
        runs = store.runs()
    else:
        runs = [find_run(store, args.run)]
    if args.rerun:
        store.diagnose(None if args.all else [runs[0].id])
    found = {r.id: store.findings(r.id) for r in runs}
    if args.json:
        print_json([{"run": r.id, "name": r.name,
                     "findings": [{"title": title(f.kind), **f.to_dict()} for f in found[r.id]]}
                    for r in runs])
        return 0
    if not runs:
        fail("no runs stored yet (headroom ingest PATH)")
    shown = [r for r in runs if found[r.id] or not args.all]
    for r in shown:
        _print_run(r, found[r.id], verbose=not args.all)
    if args.all:
        print(f"{len(runs) - len(shown)} of {len(runs)} runs have no findings")
    return 0


def _print_run(run, findings, verbose: bool) -> None:
    count = f"{len(findings)} finding(s)" if findings else "no findings"
    print(f"run {run.id} ({run.name}): {count}")
    if not verbose:
        rows = [(f.severity, f.kind, _steps(f), f.message) for f in findings]
        if rows:
            print_table(("severity", "kind", "steps", "message"), rows)
        return
    for f in findings:
        print(f"\n  [{f.severity}] {f.kind}  steps {_steps(f)}")
        print(f"  {f.message}")
        print(f"  cause:  {f.cause}")
        print(f"  remedy: {f.remedy}")
        if f.evidence:
            print("  evidence: " + ", ".join(f"{k}={_short(v)}" for k, v in f.evidence.items()))


def _steps(f) -> str:
    if f.step_start is None:
        return "-"
    if f.step_end in (None, f.step_start):
        return str(f.step_start)
    return f"{f.step_start}-{f.step_end}"


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and len(value) > 5:
        return f"[{len(value)} items]"
    return str(value)
