"""The ``headroom`` command line: one module per command, listed in COMMANDS.

Each command module has ``add_parser(subparsers, parents)`` (adding its commands
through :func:`command_parser`) and ``run(args) -> int``. Only the module of the
command asked for is imported: the others are listed by name and one-line help
alone, so ``--help`` and ``--version`` answer at once and a command pays for no
other command's imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from core import __version__

# Command name -> (module under tracker.cli that adds it, its one-line help), in --help's order.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("ingest", "ingest log files and run folders"),
    "runs": ("runs", "list stored runs"),
    "series": ("series", "print one metric of a run"),
    "diagnose": ("diagnose", "show a run's findings: OOM, NaN, spikes, plateaus, ..."),
    "checkpoints": ("checkpoints",
                    "list a run's checkpoints: best, latest, where to resume, retention"),
    "publish": ("team", "copy runs from this database to a team tracker"),
    "take-offline": ("team", "copy runs from a team tracker into this database"),
    "size": ("size", "size a training or inference run"),
    "check": ("check", "check that a training config fits a GPU"),
    "fix": ("fix", "the smallest changes that make an OOM run fit"),
    "fit": ("fit", "fit the memory model to recorded peaks"),
    "plan": ("plan", "plan a project: stages, variants, cost"),
    "watch": ("watch", "follow folders and print (or forward) alerts when runs finish, crash, "
                       "go wrong or go quiet"),
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


def command_parser(sub, name: str, parents: list[argparse.ArgumentParser],
                   **kwargs) -> argparse.ArgumentParser:
    """The subparser of tracker command ``name``, with its one-line help from COMMANDS."""
    return sub.add_parser(name, parents=parents, help=COMMANDS[name][1], **kwargs)


def build_parser(extra: dict[str, str] | None = None,
                 command: str | None = None) -> argparse.ArgumentParser:
    """The parser, complete for ``command`` (every command when None); ``extra`` adds
    commands from outside the tracker (the app's ``gui``), name -> module."""
    parser = argparse.ArgumentParser(
        prog="headroom",
        description="Headroom: track training runs and size the next one from their memory peaks.",
    )
    parser.add_argument("--version", action="version", version=f"headroom {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parents = [common_options()]
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    added: set[str] = set()  # a module may add several commands (publish and take-offline)
    for name, (module, help_) in COMMANDS.items():
        if command is not None and module != wanted:
            sub.add_parser(name, help=help_)  # listed, never run: the command asked is another
        elif module not in added:
            added.add(module)
            _module(module).add_parser(sub, parents)
    if wanted is None:
        for module in dict.fromkeys((extra or {}).values()):
            _module(module).add_parser(sub, parents)
    return parser


def _module(name: str):
    return importlib.import_module(name if "." in name else f"tracker.cli.{name}")


def _command(argv: list[str]) -> str | None:
    """The command word: the first argument that is not an option (the top level has only
    ``--help`` and ``--version``, which take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None, extra: dict[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(extra, _command(argv) or "")
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
