"""What the Help menu says: the README's sections, the keyboard and mouse, a problem report.

The README is the user's guide: in a checkout it is read beside the code, in an
installed app from the package's metadata (pip keeps it as the long
description), so Help shows the same text as the project's page.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
# What the mouse does on a plot panel (desktop/views/plot_viewbox.py).
MOUSE = (
    ("Drag on a plot", "zoom to the box drawn"),
    ("Shift+drag", "pan along x"),
    ("Wheel", "zoom x (all panels follow)"),
    ("Ctrl+wheel", "zoom y of one panel"),
    ("Double-click", "reset the panel"),
    ("Right-click", "the panel's menu: log y, clip outliers, export, hide"),
    ("Drag a panel's lower edge", "make it taller or shorter (remembered)"),
    ("Hover a run in the legend", "highlight its curves"),
    ("Escape in the filter box", "clear the filter"),
)


@dataclass(frozen=True)
class Section:
    title: str
    markdown: str


def readme() -> tuple[str, Path | None]:
    """The README's text and the folder its images are relative to (None when installed)."""
    if README.is_file():
        return README.read_text(encoding="utf-8"), README.parent
    from importlib import metadata  # slow to import, and only the installed app needs it

    try:
        return metadata.metadata("headroom").get_payload() or "", None
    except metadata.PackageNotFoundError:
        return "", None


def sections(text: str) -> list[Section]:
    """The README cut at its ``## `` headings, each with its text."""
    found = list(_SECTION.finditer(text))
    return [Section(m.group(1).strip(),
                    text[m.start():found[i + 1].start() if i + 1 < len(found) else len(text)])
            for i, m in enumerate(found)]


def problem_report(version: str, database: str, log_path: Path, versions: dict[str, str]) -> str:
    """What a bug report needs, ready to paste: versions, the platform, where the log is."""
    lines = [f"Headroom {version}", f"Python {platform.python_version()} on {platform.platform()}"]
    lines += [f"{name} {value}" for name, value in versions.items()]
    lines += [f"Database: {database}", f"Log file: {log_path}",
              "", "What happened, and what you expected:", ""]
    return "\n".join(lines)
