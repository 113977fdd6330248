"""``headroom ingest PATH...``: read logs and run folders into the database."""

from __future__ import annotations

import argparse
import sys

from tracker.cli import command_parser
from tracker.cli._output import open_store, print_json, printable


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "ingest", parents)
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tracker.ingest import ingest

    store = open_store(args.db)
    progress = _progress_bar if sys.stderr.isatty() and not args.json else None
    report = ingest(store, args.paths, progress=progress)
    if progress is not None:
        sys.stderr.write("\r\033[K")
    if args.json:
        print_json(report.to_dict())
    else:
        _print_report(report)
    return 0 if report.ok else 1


def _progress_bar(done: int, total: int, current: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    name = current[-50:]
    sys.stderr.write(f"\r\033[K[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name}")
    sys.stderr.flush()


def _print_report(report) -> None:
    for r in report.results:
        what = f"run {r.run_id} {r.run_name!r}" if r.run_id is not None else ""
        fmt_ = f" [{r.format}]" if r.format else ""
        reason = f": {r.reason}" if r.reason else ""
        print(printable(f"{r.status:<9} {r.path}{fmt_} {what}{reason}".rstrip()))
        for warning in r.warnings:
            print(f"          warning: {printable(warning)}")
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    ignored = f", {report.ignored} other files ignored" if report.ignored else ""
    print(f"{counts or 'nothing to ingest'}{ignored}" + (" (cancelled)" if report.cancelled else ""))
