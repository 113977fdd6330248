"""``headroom publish`` and ``headroom take-offline``: copy runs to and from a team tracker."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tracker.cli import command_parser
from tracker.cli._output import find_run, open_store, print_json


def add_parser(sub, parents) -> None:
    publish = command_parser(sub, "publish", parents)
    publish.add_argument("--to", required=True, metavar="URL", help="the team database URL")
    _run_options(publish)
    offline = command_parser(sub, "take-offline", parents)
    offline.add_argument("--from", dest="source", required=True, metavar="URL",
                         help="the team database URL")
    _run_options(offline)


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids or names (default with --all)")
    p.add_argument("--all", action="store_true", help="every run")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Copy run by run; Ctrl-C or a lost connection stops between runs, and the runs copied
    so far stay (exit 130 or 1, the runs not copied named)."""
    from tracker.team import copy_runs

    local = open_store(args.db)
    team = open_store(getattr(args, "to", None) or args.source)
    source, target = (local, team) if args.command == "publish" else (team, local)
    if not args.runs and not args.all:
        print("headroom: error: name runs to copy, or --all")
        return 2
    ids = [r.id for r in source.runs()] if args.all else [find_run(source, r).id for r in args.runs]
    with interrupt_flag() as interrupted:
        report = copy_runs(source, target, ids, cancel=interrupted.is_set)
    if args.json:
        print_json(report.to_dict())
    else:
        print(f"{len(report.copied)} copied to {target.display_url}, "
              f"{len(report.already_there)} already there")
    if report.error or report.cancelled:
        why = f"stopped: {report.error}" if report.error else "interrupted"
        left = ", ".join(map(str, report.not_copied))
        print(f"headroom: error: {why}; not copied: run {left}", file=sys.stderr)
    return 130 if report.cancelled else 1 if report.error else 0


@contextmanager
def interrupt_flag() -> Iterator[threading.Event]:
    """An event Ctrl-C sets (instead of raising in the middle of a run's copy); a second
    Ctrl-C interrupts as usual."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # only it may set handlers
        yield flag
        return
    previous = signal.getsignal(signal.SIGINT)

    def stop(_signum, _frame) -> None:
        flag.set()
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, stop)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
