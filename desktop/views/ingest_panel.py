"""The ingest panel: progress with Cancel while files are read, then the files by run.

Each run the ingest formed is a row with its files under it (a job's logs
together); files that formed no run come first, errors with their reason. The
summary line counts each outcome. Files can be dropped here too.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex
from PySide6.QtGui import (
    QBrush,
    QColor,
    QDragEnterEvent,
    QDropEvent,
    QFont,
    QStandardItem,
    QStandardItemModel,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from desktop.presenters import ingest_report
from desktop.services import AppServices
from desktop.widgets.drop import local_paths

HEADERS = ("Status", "File", "Format", "Details")


class IngestPanel(QWidget):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self.setAcceptDrops(True)
        self.status = QLabel("Drop logs or run folders anywhere in the window to ingest them.")
        self.progress = QProgressBar(textVisible=True)
        self.progress.setFormat("%v of %m files")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(services.cancel_ingest)
        self.close_button = QToolButton(text="✕", autoRaise=True, toolTip="Hide the ingest report")
        self.close_button.clicked.connect(self.hide)
        self.model = QStandardItemModel(0, len(HEADERS), self)
        self.model.setHorizontalHeaderLabels(list(HEADERS))
        self.table = _report_tree(self.model)
        self._layout()
        self._set_running(False)
        services.sig_ingest_started.connect(self._on_started)
        services.sig_ingest_progress.connect(self._on_progress)
        services.sig_ingest_finished.connect(self._on_finished)

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        top.addWidget(self.cancel_button)
        top.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.table)

    # ---- Drops

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event.mimeData())
        if paths:
            self._services.ingest(paths)
            event.acceptProposedAction()

    # ---- Slots

    def _on_started(self, paths: list[str]) -> None:
        self.model.removeRows(0, self.model.rowCount())
        self.progress.setRange(0, 0)  # busy until the files are counted
        self.status.setText(f"Looking for logs in {_describe(paths)}…")
        self._set_running(True)

    def _on_progress(self, done: int, total: int, label: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        if label:
            self.status.setText(f"Reading {Path(label).name}")

    def _on_finished(self, report) -> None:
        self._set_running(False)
        self.status.setText(ingest_report.summary(report))
        for group in ingest_report.groups(report):
            head = QStandardItem(group.title)
            font = QFont(head.font())
            font.setBold(True)
            head.setFont(font)
            for row in group.rows:
                head.appendRow(_items(row))
            self.model.appendRow([head, *(QStandardItem() for _ in HEADERS[1:])])
            self.table.setFirstColumnSpanned(self.model.rowCount() - 1, QModelIndex(), True)
        self.table.expandAll()

    def file_rows(self) -> list[list[str]]:
        """The report's file rows as shown (status, file, format, details), group by group."""
        out = []
        for g in range(self.model.rowCount()):
            head = self.model.item(g, 0)
            out += [[head.child(r, c).text() for c in range(len(HEADERS))]
                    for r in range(head.rowCount())]
        return out

    def _set_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.cancel_button.setEnabled(running)


def _report_tree(model: QStandardItemModel) -> QTreeView:
    tree = QTreeView(uniformRowHeights=True, alternatingRowColors=True)
    tree.setModel(model)
    tree.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
    tree.setSelectionBehavior(QTreeView.SelectionBehavior.SelectRows)
    tree.setWordWrap(False)
    header = tree.header()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(True)
    for column, width in enumerate((118, 240, 100)):
        tree.setColumnWidth(column, width)
    return tree


def _items(row: ingest_report.ReportRow) -> list[QStandardItem]:
    items = [QStandardItem(text) for text in
             (row.status, row.shown or Path(row.path).name or row.path, row.format, row.detail)]
    items[0].setForeground(QBrush(QColor(ingest_report.STATUS_COLOURS.get(row.status, "#000"))))
    items[1].setToolTip(row.path + (f"\nrun: {row.run}" if row.run else ""))
    items[3].setToolTip(row.detail)
    return items


def _describe(paths: list[str]) -> str:
    if not paths:
        return "every stored run's files"
    return Path(paths[0]).name if len(paths) == 1 else f"{len(paths)} places"
