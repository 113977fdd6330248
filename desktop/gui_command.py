"""``headroom gui [PATH...]``: open the desktop window (also the default command)."""

from __future__ import annotations

import argparse


def add_parser(sub, parents) -> None:
    p = sub.add_parser("gui", parents=parents, help="open the desktop app (the default)")
    p.add_argument("paths", nargs="*", metavar="PATH", help="logs or run folders to ingest at start")
    p.add_argument("--smoke", action="store_true",
                   help="open (on a temporary database unless --db is given), print the time "
                        "to first paint, exit")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from desktop.app import run_app

    return run_app(db=args.db, paths=args.paths, smoke=args.smoke)
