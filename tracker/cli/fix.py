"""``headroom fix RUN``: a run that ran out of GPU memory, and the smallest changes that fit."""

from __future__ import annotations

import argparse

from tracker.cli import command_parser
from tracker.cli._output import fail, find_run, open_store, print_json, print_table


def add_parser(sub, parents) -> None:
    p = command_parser(
        sub, "fix", parents,
        description="Rebuild a run that ran out of GPU memory from its recorded shape, hold the "
                    "memory model to the failure, and propose the cheapest changes that fit "
                    "its GPUs with the margin, each with its config.")
    p.add_argument("run", metavar="RUN", help="run id or name")
    p.add_argument("--gpu", metavar="NAME", help="the GPU, when the run did not record it")
    p.add_argument("--export", metavar="FORMAT",
                   help="config format of the proposals (default: the run's framework's)")
    p.add_argument("--limit", type=int, default=3, metavar="N", help="proposals to make")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.export import FORMATS
    from tracker.fix import answer, as_dict

    if args.export and args.export not in FORMATS:
        fail(f"unknown format {args.export!r} (choose from {', '.join(FORMATS)})", code=2)
    store = open_store(args.db)
    target = find_run(store, args.run)
    try:
        found = answer(store, target, args.gpu, args.export, max(1, args.limit))
    except ValueError as err:  # NoFix, ModelError: one line each
        fail(str(err), code=2)
    report = as_dict(found)
    if args.json:
        print_json(report)
    else:
        _print(report)
    return 0 if report["fixes"] else 1


def _print(report: dict) -> None:
    from tracker.fix import failure_text

    print(f"run {report['run']} ({report['name']}): {report['model']} on {report['gpus']} x "
          f"{report['gpu']}, global batch {report['global_batch']}")
    print(f"  {failure_text(report)}")
    if report["assumed"]:
        print(f"  assumed (the run did not record): {', '.join(report['assumed'])}")
    if not report["fixes"]:
        print("\nNo change on these GPUs, more of them or a bigger card fits.")
        return
    rows = [(n, x["rung"], "; ".join(x["changes"]) or "as asked", x["gpus"], x["gpu"],
             f"{x['device_gib']:.1f} of {x['capacity_gib']:g}", f"{x['speed']:.0%}",
             x["global_batch"]) for n, x in enumerate(report["fixes"], 1)]
    print()
    print_table(("#", "rung", "changes", "GPUs", "GPU", "GiB/GPU", "speed kept", "global batch"),
                rows)
    first = report["fixes"][0]["export"]
    if first:
        print(f"\nconfig for #1 ({first['format']}, plan {first['plan_hash']}):\n")
        print(first["text"], end="")
        for note in first["notes"]:
            print(f"note: {note}")
    for note in report["export_notes"]:
        print(f"note: {note}")
