"""``headroom runs``: list stored runs with their shape and metric summaries."""

from __future__ import annotations

import argparse

from tracker.cli import _query, command_parser
from tracker.cli._output import open_store, print_json, print_table


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "runs", parents)
    p.add_argument("--json", action="store_true", help="print as JSON")
    _query.add_arguments(p)
    p.add_argument("--stale-after", type=float, metavar="S", default=None,
                   help="a running run silent this many seconds is shown as crashed? (600)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from core.status import STALE_AFTER_S
    from tracker import liveness

    stale = STALE_AFTER_S if args.stale_after is None else args.stale_after

    def live(found) -> None:
        liveness.apply(found, datetime.now(UTC), stale)

    runs = None if args.where or args.group_by else _listed(args.db)
    if runs is not None:
        live(runs)
    else:
        store = open_store(args.db)
        runs = _query.selected_runs(store, args.where, live)
        if args.group_by:
            return _query.print_groups(store, runs, args.group_by, args.json)
    if args.json:
        print_json([_as_dict(r) for r in runs])
        return 0
    rows = [
        (r.id, r.name, r.format, str(r.status), len(r.series), r.stat("loss", "last_step"),
         r.stat("loss", "last"), _peak(r), r.source_path)
        for r in runs
    ]
    print_table(("id", "name", "format", "status", "metrics", "steps", "loss", "peak GiB",
                 "source"), rows)
    return 0


def _listed(db: str | None):
    """Every run, read without the ORM when the database allows (a local SQLite file at the
    current schema); None when the store must be opened (see :mod:`tracker.db.listing`)."""
    from tracker.db import listing
    from tracker.db.engine import default_url, normalize_url

    return listing.summaries(normalize_url(db) if db else default_url())


def _peak(run) -> float | None:
    from core.metrics import MEMORY_COUNTERS

    peaks = [run.stat(n, "max") for n in MEMORY_COUNTERS]
    peaks = [p for p in peaks if p is not None]
    return max(peaks) if peaks else None


def _as_dict(run) -> dict:
    from tracker.fields import summary_values

    return {
        "id": run.id,
        "name": run.name,
        "format": run.format,
        "source_path": run.source_path,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "status": str(run.status),
        "tags": run.tags,
        "severity": run.severity,
        **summary_values(run),
        "shape": run.shape.known(),
        "shape_sources": run.shape.sources,
        "plan": run.plan_link(),
        "metrics": {
            name: {"count": s.count, "min": s.min, "max": s.max, "last": s.last,
                   "first_step": s.first_step, "last_step": s.last_step,
                   "first_nonfinite_step": s.first_nonfinite_step, "original_name": s.original_name}
            for name, s in sorted(run.series.items())
        },
    }
