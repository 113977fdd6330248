"""``headroom series RUN METRIC``: every point of one metric of one run."""

from __future__ import annotations

import argparse
import math

from tracker.cli import command_parser
from tracker.cli._output import fail, find_run, open_store, print_json


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "series", parents)
    p.add_argument("run", metavar="RUN", help="run id or name")
    p.add_argument("metric", metavar="METRIC", help="metric name, e.g. loss")
    p.add_argument("--json", action="store_true", help="print as JSON (NaN and Inf as null)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    summary = find_run(store, args.run)
    if args.metric not in summary.series:
        names = ", ".join(sorted(summary.series)) or "none"
        fail(f"run {summary.id} has no metric {args.metric!r} (it has: {names})")
    series = store.series(summary.id, args.metric)
    if args.json:
        print_json({"run": summary.id, "metric": series.name, "original_name": series.original,
                    "steps": series.steps.tolist(), "values": series.values.tolist()})
        return 0
    print(f"step\t{series.name}")
    for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
        print(f"{step}\t{value if math.isfinite(value) else str(value)}")
    return 0
