"""The ``headroom`` entry point: the desktop app, or a tracker command.

``headroom`` alone, ``headroom gui`` or ``headroom PATH...`` opens the window;
``headroom ingest|runs|...`` runs the command line without loading Qt. A first
word that is neither a command nor an existing path is a typo, and argparse
says so rather than the app opening.
"""

from __future__ import annotations

import os
import sys

from tracker.cli import COMMANDS
from tracker.cli import main as cli_main

APP_COMMANDS = {"gui": "desktop.gui_command", "install-desktop-entry": "desktop.desktop_entry"}
_CLI_ONLY = ("-h", "--help", "--version")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return cli_main(_with_default_command(argv), extra=APP_COMMANDS)


def _with_default_command(argv: list[str]) -> list[str]:
    if not argv:
        return ["gui"]
    first = argv[0]
    if first in COMMANDS or first in APP_COMMANDS or first in _CLI_ONLY:
        return argv
    if first.startswith("-") or os.path.exists(first):
        return ["gui", *argv]
    return argv


if __name__ == "__main__":
    sys.exit(main())
