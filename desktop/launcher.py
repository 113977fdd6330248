"""The ``headroom`` entry point: the desktop app, or a tracker command.

``headroom`` alone, ``headroom gui`` or ``headroom PATH...`` opens the window;
``headroom ingest|runs|...`` runs the command line without loading Qt.
"""

from __future__ import annotations

import sys

from tracker.cli import COMMANDS
from tracker.cli import main as cli_main

APP_COMMANDS = {"gui": "desktop.gui_command"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in APP_COMMANDS
                    and not argv[0].startswith("-")):
        argv = ["gui", *argv]
    elif argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["gui", *argv]
    return cli_main(argv, extra=APP_COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
