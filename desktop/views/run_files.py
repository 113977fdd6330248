"""The Details tab's Files: the logs a run was read from, its own and those that joined it.

A run is a job: beside its own log it may hold another logger's (its curves kept
once) and a GPU sampler's (system metrics). Each log is a row with its files
under it; a log that joined can be split off into a run of its own again, and
runs are merged from the runs table's menu.
"""

from __future__ import annotations

import os
from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTreeView, QVBoxLayout, QWidget

from core.metrics import size_text
from desktop.presenters import formatting as fmt
from desktop.services import AppServices, PartInfo, RunDetails, SourceStat

HEADERS = ("File", "Size", "Modified")
PART_ROLE = Qt.ItemDataRole.UserRole + 1  # the part id of a joined log's rows
MERGE_HINT = ("Logs of one training join one run. To join runs by hand, select them in the "
              "runs table and choose Merge into One Run.")
ROLES = {"logger": "another log of the same training", "system": "GPU sampler: system metrics"}


class RunFiles(QWidget):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self.model = QStandardItemModel(0, len(HEADERS), self)
        self.model.setHorizontalHeaderLabels(list(HEADERS))
        self.tree = QTreeView(uniformRowHeights=True, alternatingRowColors=True)
        self.tree.setModel(self.model)
        self.tree.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
        self.tree.setColumnWidth(0, 520)
        self.tree.selectionModel().currentChanged.connect(self._on_current)
        self.split_button = QPushButton("Split Off", enabled=False,
                                        toolTip="Make the selected log a run of its own again")
        self.split_button.clicked.connect(self.split_selected)
        hint = QLabel(MERGE_HINT, wordWrap=True)
        hint.setStyleSheet("color: #616e7c;")
        row = QHBoxLayout()
        row.addWidget(hint, 1)
        row.addWidget(self.split_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree, 1)
        layout.addLayout(row)

    def show_run(self, details: RunDetails) -> None:
        """The run's own log with its files, then each log that joined it."""
        self.model.removeRows(0, self.model.rowCount())
        run, sources, parts = details.summary, details.sources, details.parts
        joined = {path for part in parts for path in part.files}
        own = _group(f"{os.path.basename(run.source_path)} ({run.format}): the run's own log",
                     run.source_path)
        for source in sources:
            if source.path not in joined:
                own.appendRow(_file(source))
        self.model.appendRow([own, QStandardItem(), QStandardItem()])
        by_path = {s.path: s for s in sources}
        for part in parts:
            group = _group(_part_title(part), _part_tip(part), part.id)
            for path in part.files:
                if path in by_path:
                    group.appendRow(_file(by_path[path], part.id))
            self.model.appendRow([group, QStandardItem(), QStandardItem()])
        self.tree.expandAll()
        self.split_button.setEnabled(False)

    def split_selected(self) -> None:
        part = self._current_part()
        if part is not None:
            self._services.split_part(part)

    def _current_part(self) -> int | None:
        index = self.tree.currentIndex()
        return index.siblingAtColumn(0).data(PART_ROLE) if index.isValid() else None

    def _on_current(self) -> None:
        self.split_button.setEnabled(self._current_part() is not None)


def _part_title(part: PartInfo) -> str:
    kept = f"; kept once: {', '.join(part.duplicates)}" if part.duplicates else ""
    return f"{os.path.basename(part.source_path)} ({part.format}): {ROLES[part.role]}{kept}"


def _part_tip(part: PartInfo) -> str:
    brought = ", ".join(part.metrics) or "no metric of its own"
    lines = [part.source_path, f"brought: {brought}"]
    return "\n".join(lines + ([part.note] if part.note else []))


def _group(text: str, tip: str, part: int | None = None) -> QStandardItem:
    item = QStandardItem(text)
    font = QFont(item.font())
    font.setBold(True)
    item.setFont(font)
    item.setToolTip(tip)
    item.setData(part, PART_ROLE)
    return item


def _file(source: SourceStat, part: int | None = None) -> list[QStandardItem]:
    modified = fmt.when(datetime.fromtimestamp(source.mtime))
    items = [QStandardItem(source.path), QStandardItem(size_text(source.size)),
             QStandardItem(modified)]
    items[0].setToolTip(source.path)
    items[0].setData(part, PART_ROLE)
    for item in items[1:]:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return items
