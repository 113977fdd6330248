"""``headroom publish`` and ``headroom take-offline``: copy runs to and from a team tracker."""

from __future__ import annotations

import argparse

from tracker.cli._output import find_run, open_store, print_json


def add_parser(sub, parents) -> None:
    publish = sub.add_parser("publish", parents=parents,
                             help="copy runs from this database to a team tracker")
    publish.add_argument("--to", required=True, metavar="URL", help="the team database URL")
    _run_options(publish)
    offline = sub.add_parser("take-offline", parents=parents,
                             help="copy runs from a team tracker into this database")
    offline.add_argument("--from", dest="source", required=True, metavar="URL",
                         help="the team database URL")
    _run_options(offline)


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids or names (default with --all)")
    p.add_argument("--all", action="store_true", help="every run")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tracker.team import copy_runs

    local = open_store(args.db)
    team = open_store(getattr(args, "to", None) or args.source)
    source, target = (local, team) if args.command == "publish" else (team, local)
    if not args.runs and not args.all:
        print("headroom: error: name runs to copy, or --all")
        return 2
    ids = [r.id for r in source.runs()] if args.all else [find_run(source, r).id for r in args.runs]
    report = copy_runs(source, target, ids)
    if args.json:
        print_json({"copied": report.copied, "already_there": report.already_there})
    else:
        print(f"{len(report.copied)} copied to {target.display_url}, "
              f"{len(report.already_there)} already there")
    return 0
