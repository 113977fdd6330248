"""``headroom install-desktop-entry``: Headroom in the Linux desktop's launcher, with its icon.

Writes a freedesktop.org ``headroom.desktop`` entry into
``$XDG_DATA_HOME/applications`` and the icon into the hicolor theme of
``$XDG_DATA_HOME/icons`` (``~/.local/share`` when the variable is unset);
``--uninstall`` removes exactly those files. The entry starts this Python with
``-m desktop.launcher``, so it works wherever pip or pipx installed Headroom,
and passes the files and folders dropped on it (``%F``). No Qt is needed here.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

from core.resources import resources_dir

APP_ID = "headroom"  # the entry's file name, the icon's name, and Qt's desktop file name
# Characters the Desktop Entry spec reserves in an Exec argument (it must then be quoted).
_RESERVED = re.compile(r"[\s\"'\\><~|&;$*?#()`]")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("install-desktop-entry",  # no --db: the entry serves every database
                       help="add Headroom to the Linux desktop's application launcher")
    p.add_argument("--uninstall", action="store_true", help="remove the entry and its icons")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        print("headroom: error: desktop entries are a Linux desktop feature; on this system "
              "start the app with `headroom`", file=sys.stderr)
        return 2
    root = data_home()
    changed = uninstall(root) if args.uninstall else install(root, launch_command())
    for path in changed:
        print(f"{'removed' if args.uninstall else 'wrote'} {path}")
    if not changed:
        print("nothing to remove")
    return 0


def data_home() -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (the XDG Base Directory default)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def launch_command() -> list[str]:
    """This interpreter running the launcher: no shell, no reliance on PATH."""
    return [sys.executable, "-m", "desktop.launcher"]


def install(root: Path, command: list[str]) -> list[Path]:
    """Write the entry and the icons under ``root``; returns the files written."""
    written = []
    for source, target in _icon_files(root):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(target)
    entry = root / "applications" / f"{APP_ID}.desktop"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(entry_text(command), encoding="utf-8")
    return [*written, entry]


def uninstall(root: Path) -> list[Path]:
    """Remove what :func:`install` wrote (and nothing else); returns the files removed."""
    paths = [root / "applications" / f"{APP_ID}.desktop", *(t for _, t in _icon_files(root))]
    removed = [p for p in paths if p.is_file()]
    for path in removed:
        path.unlink()
    return removed


def entry_text(command: list[str]) -> str:
    """The ``.desktop`` file: Headroom in the Development menu, opening the files given (%F)."""
    exec_line = " ".join(_exec_arg(a) for a in [*command, "gui"]) + " %F"
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=Headroom",
        "GenericName=Experiment Tracker",
        "Comment=Track training runs and size the next one from their memory peaks",
        f"TryExec={_escape(command[0])}",
        f"Exec={exec_line}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "StartupNotify=true",
        "StartupWMClass=Headroom",
        "Categories=Development;",
        "Keywords=training;GPU;memory;logs;TensorBoard;checkpoints;",
        "",
    ])


def _icon_files(root: Path) -> list[tuple[Path, Path]]:
    """(shipped icon, where the hicolor theme wants it): the SVG and each PNG size."""
    icons = resources_dir() / "icons"
    theme = root / "icons" / "hicolor"
    pairs = [(icons / f"{APP_ID}.svg", theme / "scalable" / "apps" / f"{APP_ID}.svg")]
    for png in sorted(icons.glob(f"{APP_ID}-*.png")):
        size = png.stem.rsplit("-", 1)[1]
        pairs.append((png, theme / f"{size}x{size}" / "apps" / f"{APP_ID}.png"))
    return pairs


def _exec_arg(arg: str) -> str:
    """One Exec argument, quoted as the spec asks when it holds a reserved character."""
    if _RESERVED.search(arg):
        arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
    return _escape(arg).replace("%", "%%")


def _escape(value: str) -> str:
    """A desktop-entry string value (backslash is its own escape)."""
    return value.replace("\\", "\\\\")
