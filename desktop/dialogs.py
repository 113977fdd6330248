"""Small modal questions: rename, tags, notes, delete confirmation, About.

Each returns the user's answer (or None when cancelled) so callers stay one
line, and tests can replace a function rather than drive a dialog.
"""

from __future__ import annotations

import platform
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QInputDialog, QLineEdit, QMessageBox, QWidget

from core import __version__


def ask_name(parent: QWidget, current: str) -> str | None:
    name, ok = QInputDialog.getText(parent, "Rename run", "Name:", QLineEdit.EchoMode.Normal,
                                    current)
    return name.strip() if ok and name.strip() else None


def ask_tags(parent: QWidget, current: list[str], count: int) -> list[str] | None:
    """Comma-separated tags; for several runs the tags are added to each."""
    label = "Tags (comma-separated):" if count == 1 else f"Tags to add to {count} runs:"
    text, ok = QInputDialog.getText(parent, "Tags", label, QLineEdit.EchoMode.Normal,
                                    ", ".join(current))
    return [t.strip() for t in text.split(",") if t.strip()] if ok else None


def ask_notes(parent: QWidget, current: str) -> str | None:
    text, ok = QInputDialog.getMultiLineText(parent, "Notes", "Notes on this run:", current)
    return text if ok else None


def confirm_delete(parent: QWidget, names: list[str]) -> bool:
    shown = "\n".join(f"  • {n}" for n in names[:8]) + ("\n  …" if len(names) > 8 else "")
    what = "this run" if len(names) == 1 else f"these {len(names)} runs"
    answer = QMessageBox.question(
        parent, "Delete runs",
        f"Delete {what} from the Headroom database?\n\n{shown}\n\n"
        "Your log files and checkpoints on disk are not touched; "
        "you can ingest them again at any time.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


def confirm_delete_project(parent: QWidget, name: str) -> bool:
    answer = QMessageBox.question(
        parent, "Delete project",
        f"Delete the project {name!r} and its links to runs from the Headroom database?\n\n"
        "The runs themselves and any TOML file you imported stay.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


def ask_report_path(parent: QWidget, title: str, stem: str) -> Path | None:
    """Where to write a report: Markdown (a PNG chart beside it) or one HTML file."""
    name, chosen = QFileDialog.getSaveFileName(
        parent, title, str(Path.home() / f"{stem}.md"),
        "Markdown with a PNG chart (*.md);;HTML, one file (*.html)")
    if not name:
        return None
    path = Path(name)
    return path if path.suffix else path.with_suffix(".html" if "HTML" in chosen else ".md")


def about(parent: QWidget, database: str) -> None:
    import pyqtgraph
    import PySide6

    QMessageBox.about(
        parent, "About Headroom",
        f"<h3>Headroom {__version__}</h3>"
        "<p>A desktop experiment tracker that sizes your next training run "
        "from the memory peaks of your past runs.</p>"
        f"<p>Database: <code>{database}</code></p>"
        f"<p><small>Python {platform.python_version()} · PySide6 {PySide6.__version__} · "
        f"pyqtgraph {pyqtgraph.__version__}</small></p>",
    )
