"""``headroom watch FOLDER...``: follow folders as runs write into them, and say what happened.

Each look ingests the logs that are new or grew (as the app's watched folders
do), then prints one line per alert: a run finished, crashed, raised a
critical finding, or went quiet. The command hook and webhook of the alerts
file (``headroom watch --help`` names it) get the same alerts; ``--on-alert``
and ``--webhook`` override them. Ctrl+C stops.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tracker.cli import command_parser
from tracker.cli._output import fail, open_store, printable


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "watch", parents)
    p.add_argument("folders", nargs="+", metavar="FOLDER", help="folders (or log files) to follow")
    p.add_argument("--interval", type=float, default=5.0, metavar="S",
                   help="seconds between looks (default 5)")
    p.add_argument("--quiet-after", type=float, metavar="MIN",
                   help="minutes without new points before a running run counts as quiet "
                        "(default: the alerts file's quiet_minutes, else 10)")
    p.add_argument("--on-alert", metavar="COMMAND",
                   help='run this for each alert, e.g. "notify-send Headroom {message}" '
                        "({kind} {run} {run_id} {message} {folder} are replaced)")
    p.add_argument("--webhook", metavar="URL", help="POST each alert to this URL as JSON")
    p.add_argument("--json", action="store_true", help="print each alert as a JSON line")
    p.add_argument("--looks", type=int, metavar="N", help="stop after N looks (default: never)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tracker import alerts
    from tracker.watch import FolderWatch

    config = _config(args)
    store = open_store(args.db)
    folders = [str(Path(f).resolve()) for f in args.folders]
    watch, watcher = FolderWatch(), alerts.Watcher(config.quiet_minutes * 60)
    looks = 0
    try:
        while True:
            _look(store, watch, watcher, folders, config, args.json, first=looks == 0)
            looks += 1
            if args.looks and looks >= args.looks:
                return 0
            wait(args.interval)
    except KeyboardInterrupt:
        return 0


def wait(seconds: float) -> None:
    """Between looks (a test makes its runs progress here instead)."""
    time.sleep(seconds)


def _config(args: argparse.Namespace):
    from tracker import alerts

    try:
        config = alerts.load()
    except alerts.AlertConfigError as err:
        fail(f"alerts file: {err}")
    if args.on_alert is not None:
        config.on_alert = args.on_alert
    if args.webhook is not None:
        config.webhook = args.webhook
    if args.quiet_after is not None:
        config.quiet_minutes = args.quiet_after
    return config


def _look(store, watch, watcher, folders: list[str], config, as_json: bool, first: bool) -> None:
    from tracker import alerts
    from tracker.ingest import ingest

    changes = watch.look([Path(f) for f in folders])
    for place in changes.missing:
        _say(f"{place} is not there; it is followed if it appears")
    if changes.units:
        report = ingest(store, [str(u) for u in changes.units])
        for result in report.results:
            if result.status == "error":
                _say(f"{result.path}: {result.reason}")
    runs = [r for r in store.runs() if any(alerts.within(r.source_path, f) for f in folders)]
    news = watcher.update(runs, store.findings)
    if first:
        _say(f"watching {len(runs)} run{'s' * (len(runs) != 1)} in {', '.join(folders)}")
    for alert in news:
        folder = config.folder_of(_source(runs, alert.run_id), folders)
        if alert.kind not in config.kinds_for(folder or _source(runs, alert.run_id)):
            continue
        alert = alerts.Alert(alert.kind, alert.run_id, alert.run, alert.message, folder)
        if as_json:
            print(json.dumps(alert.to_dict(), ensure_ascii=False), flush=True)
        else:
            print(f"{time.strftime('%H:%M:%S')}  {printable(alert.line())}", flush=True)
        for error in alerts.forward(alert, config):
            _say(error)


def _source(runs, run_id: int) -> str:
    return next((r.source_path for r in runs if r.id == run_id), "")


def _say(message: str) -> None:
    print(f"headroom watch: {printable(message)}", file=sys.stderr, flush=True)
