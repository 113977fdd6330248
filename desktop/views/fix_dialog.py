"""Find the smallest fix: a run that ran out of GPU memory, and the changes that fit.

Opened from an out-of-memory finding. The search (``tracker.fix``: the run's
recorded shape held to its failure, knobs in order of what they cost the
user) runs in the pool; the dialog lists the proposals and shows the
selected one's config, to copy or save. The sizing wizard stays one click
away for changing the experiment itself.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.presenters import fix_view as present
from desktop.services import AppServices


class FixDialog(QDialog):
    def __init__(self, services: AppServices, run_id: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Find the Smallest Fix")
        self.resize(980, 620)
        self._services = services
        self.run_id = run_id
        self.report: dict | None = None
        self.heading = QLabel(present.LOOKING, wordWrap=True, textFormat=Qt.TextFormat.RichText)
        self.table = QTreeWidget(rootIsDecorated=False, alternatingRowColors=True)
        self.table.setHeaderLabels(list(present.HEADERS))
        for column, width in enumerate((26, 470, 150, 100, 80, 90)):
            self.table.setColumnWidth(column, width)
        self.table.currentItemChanged.connect(self._show_config)
        self.config = QPlainTextEdit(readOnly=True)
        self.config.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.status = QLabel()
        self.copy_button = QPushButton("Copy Config", enabled=False)
        self.save_button = QPushButton("Save Config…", enabled=False)
        self.wizard_button = QPushButton("Open in the Sizing Wizard…",
                                         enabled=services.sizing_available())
        self._layout()
        self.copy_button.clicked.connect(self.copy_config)
        self.save_button.clicked.connect(self._save_dialog)
        self.wizard_button.clicked.connect(self._open_wizard)
        self._worker = services.workers.start(lambda _w: present.answer(services.store, run_id),
                                              self._on_answer, self._on_error)

    def _layout(self) -> None:
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        for button in (self.copy_button, self.save_button, self.wizard_button):
            buttons.addWidget(button)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.config, 2)
        layout.addLayout(buttons)

    # ---- The answer

    def _on_answer(self, report: dict) -> None:
        self.report = report
        self.heading.setText(present.heading(report))
        for row in present.rows(report):
            item = QTreeWidgetItem(list(row))
            item.setToolTip(1, row[1])
            self.table.addTopLevelItem(item)
        if report["fixes"]:
            self.table.setCurrentItem(self.table.topLevelItem(0))
        else:
            self.status.setText(present.NOTHING)

    def _on_error(self, message: str) -> None:
        self.heading.setText(f"<b>No fix found.</b> {message}")

    def selected(self) -> dict | None:
        index = self.table.indexOfTopLevelItem(self.table.currentItem())
        return self.report["fixes"][index] if self.report and index >= 0 else None

    def _show_config(self) -> None:
        fix = self.selected()
        self.config.setPlainText(present.config(fix) if fix else "")
        exported = bool(fix and fix.get("export"))
        self.copy_button.setEnabled(exported)
        self.save_button.setEnabled(exported)

    # ---- Copy, save, size

    def copy_config(self) -> None:
        QGuiApplication.clipboard().setText(self.config.toPlainText())
        self.status.setText("Copied the config")

    def save(self, path: Path) -> None:
        """Write the selected proposal's config to ``path``."""
        fix = self.selected()
        if fix and fix.get("export"):
            path.write_text(fix["export"]["text"], encoding="utf-8")
            self.status.setText(f"Saved plan {fix['export']['plan_hash']} to {path}")

    def _save_dialog(self) -> None:
        fix = self.selected()
        if not fix or not fix.get("export"):
            return
        name, _ = QFileDialog.getSaveFileName(self, "Save the config",
                                              str(Path.home() / fix["export"]["filename"]))
        if name:
            try:
                self.save(Path(name))
            except OSError as err:
                self.status.setText(f"Could not write {name}: {err.strerror or err}")

    def _open_wizard(self) -> None:
        if self._services.request_sizing(self.run_id):
            self.accept()

