"""The Help menu's windows: a README section, the keyboard and mouse, a problem report."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMessageBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop.presenters import help_text
from desktop.presenters.help_text import Section


def show_section(parent: QWidget, section: Section, images: Path | None) -> QDialog:
    """A README section as formatted text (its screenshots too, in a checkout)."""
    browser = QTextBrowser(openExternalLinks=True)
    if images is not None:
        browser.setSearchPaths([str(images)])
    browser.setMarkdown(section.markdown)
    return _dialog(parent, f"Headroom — {section.title}", browser, (860, 640))


def show_shortcuts(parent: QWidget, actions: list[tuple[str, list[QKeySequence]]]) -> QDialog:
    """Every menu command's keys, then what the mouse does on the plots."""
    rows = [(text.replace("&", ""), ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText)
                                              for k in keys)) for text, keys in actions if keys]
    rows += list(help_text.MOUSE)
    cells = "".join(f"<tr><td style='padding-right:18px'>{a}</td><td><b>{b}</b></td></tr>"
                    for a, b in rows)
    browser = QTextBrowser()
    browser.setHtml(f"<h3>Keyboard and mouse</h3><table>{cells}</table>")
    return _dialog(parent, "Keyboard Shortcuts", browser, (520, 560))


def report_problem(parent: QWidget, report: str) -> None:
    """Copy the report to the clipboard and say where to paste it."""
    QGuiApplication.clipboard().setText(report)
    QMessageBox.information(
        parent, "Report a Problem",
        "The versions and the log file's path are on the clipboard:\n\n" + report.split(
            "\n\n", 1)[0] + "\n\nPaste them into your report, with what happened.")


def _dialog(parent: QWidget, title: str, body: QWidget, size: tuple[int, int]) -> QDialog:
    dialog = QDialog(parent, windowTitle=title)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(body)
    layout.addWidget(buttons)
    dialog.resize(*size)
    dialog.show()
    return dialog
