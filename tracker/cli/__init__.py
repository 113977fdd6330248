"""The ``headroom`` command line: one module per command, listed in COMMANDS.

Each command module has ``add_parser(subparsers, parents)`` and ``run(args) ->
int``. Nothing heavy is imported until a command runs, so ``--help`` and
``--version`` answer at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from core import __version__

# Command name -> module under tracker.cli that adds it, in the order --help lists them.
COMMANDS: dict[str, str] = {
    "ingest": "ingest",
    "runs": "runs",
    "series": "series",
    "diagnose": "diagnose",
    "checkpoints": "checkpoints",
    "publish": "team",
    "take-offline": "team",
    "size": "size",
    "check": "check",
    "fix": "fix",
    "fit": "fit",
    "plan": "plan",
    "watch": "watch",
}


def common_options() -> argparse.ArgumentParser:
    """Options every command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--db",
        metavar="URL",
        help="database URL or SQLite file (default: $HEADROOM_DB, else the user data folder)",
    )
    return parent


def build_parser(extra: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The full parser; ``extra`` adds commands from outside the tracker (the app's ``gui``)."""
    parser = argparse.ArgumentParser(
        prog="headroom",
        description="Headroom: track training runs and size the next one from their memory peaks.",
    )
    parser.add_argument("--version", action="version", version=f"headroom {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parents = [common_options()]
    # A module may add several commands (publish and take-offline): add each module once.
    for module in dict.fromkeys({**COMMANDS, **(extra or {})}.values()):
        _module(module).add_parser(sub, parents)
    return parser


def _module(name: str):
    return importlib.import_module(name if "." in name else f"tracker.cli.{name}")


def main(argv: list[str] | None = None, extra: dict[str, str] | None = None) -> int:
    parser = build_parser(extra)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # `headroom runs | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
