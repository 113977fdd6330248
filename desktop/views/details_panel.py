"""Run details: the current run's shape (editable), config, metric statistics, files and notes.

The current run is the one most recently added to the selection.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from desktop.presenters import formatting as fmt
from desktop.presenters import shape_fields
from desktop.presenters.plot_data import title
from desktop.services import AppServices, RunDetails, RunSummary
from desktop.views.config_tree import ConfigTree
from desktop.views.run_files import RunFiles
from desktop.views.shape_editor import ShapeEditor

SELECT_A_RUN = "Select a run in the table to see its details."
STAT_HEADERS = ("Metric", "Points", "Steps", "Min", "Max", "Last", "First NaN/Inf")


class DetailsPanel(QWidget):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self.run: RunSummary | None = None
        self.title = QLabel(textFormat=Qt.TextFormat.RichText)
        self.meta = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText,
                           textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta.setStyleSheet("color: #52606d;")
        self.shape = ShapeEditor()
        self.shape.sig_field_edited.connect(self._on_shape_edit)
        self.config = ConfigTree()
        self.stats_model = QStandardItemModel(0, len(STAT_HEADERS), self)
        self.files = RunFiles(services)
        self.notes = QPlainTextEdit(placeholderText="What was this run for? What did you learn?")
        self.tags = QLineEdit(placeholderText="tags, comma-separated")
        self.tabs = self._make_tabs()
        self.stack = QStackedWidget()
        self.stack.addWidget(QLabel(SELECT_A_RUN, alignment=Qt.AlignmentFlag.AlignCenter))
        self.stack.addWidget(self._details_page())
        QVBoxLayout(self).addWidget(self.stack)
        services.sig_selection_changed.connect(self._on_selection)
        services.sig_runs_changed.connect(self._on_runs_changed)

    def _make_tabs(self) -> QTabWidget:
        tabs = QTabWidget(documentMode=True)
        tabs.addTab(self.shape, "Shape")
        tabs.addTab(self.config, "Config")
        tabs.addTab(_table(self.stats_model, STAT_HEADERS, first_width=200), "Metrics")
        tabs.addTab(self.files, "Files")
        tabs.addTab(self._notes_page(), "Notes")
        return tabs

    def _notes_page(self) -> QWidget:
        save = QPushButton("Save notes and tags")
        save.clicked.connect(self._save_notes)
        row = QHBoxLayout()
        row.addWidget(self.tags, 1)
        row.addWidget(save)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addWidget(self.notes)
        layout.addLayout(row)
        return page

    def _details_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.meta)
        layout.addWidget(self.tabs, 1)
        return page

    # ---- Showing a run

    def show_run(self, details: RunDetails | None) -> None:
        run = self.run = details.summary if details else None
        if run is None:
            self.stack.setCurrentIndex(0)
            return
        self.title.setText(f"<span style='font-size:15px; font-weight:600'>"
                           f"{html.escape(run.name)}</span>")
        self.meta.setText(_meta(run))
        self.shape.set_shape(run.shape)
        self.config.set_config(details.config)
        self._fill_stats(run, details.final_values)
        self.files.show_run(details)
        self.notes.setPlainText(run.notes)
        self.tags.setText(", ".join(run.tags))
        self.stack.setCurrentIndex(1)

    def _fill_stats(self, run: RunSummary, final_values: dict[str, Any]) -> None:
        self.stats_model.removeRows(0, self.stats_model.rowCount())
        for name, s in sorted(run.series.items()):
            steps = f"{fmt.count(s.first_step)} – {fmt.count(s.last_step)}"
            cells = (title(name), fmt.count(s.count), steps, fmt.number(s.min), fmt.number(s.max),
                     fmt.number(s.last), fmt.count(s.first_nonfinite_step))
            self.stats_model.appendRow(_row(cells, tip=f"{name} (logged as {s.original_name})"))
        for key, value in sorted(final_values.items()):
            shown = fmt.number(value) if isinstance(value, (int, float)) else str(value)
            self.stats_model.appendRow(_row((key, "", "once per run", "", "", shown, "")))

    # ---- Slots

    def _current_id(self) -> int | None:
        return self._services.selected[-1] if self._services.selected else None

    def _on_selection(self, _ids: list[int]) -> None:
        run_id = self._current_id()
        if self.run is None or run_id != self.run.id:
            self._reload(run_id)

    def _on_runs_changed(self) -> None:
        self._reload(self._current_id(), only_if_changed=True)

    def _reload(self, run_id: int | None, only_if_changed: bool = False) -> None:
        details = self._services.details(run_id) if run_id is not None else None
        run = details.summary if details else None
        if not (only_if_changed and run == self.run):  # keep half-typed notes while others ingest
            self.show_run(details)

    def _on_shape_edit(self, name: str, typed: str) -> None:
        if self.run is None:
            return
        try:
            value = shape_fields.parse(name, typed)
        except ValueError as err:
            self._services.sig_message.emit(f"Not saved: {err}")
            self.shape.set_shape(self.run.shape)
            return
        self._services.set_shape_field(self.run.id, name, value)

    def _save_notes(self) -> None:
        if self.run is not None:
            run_id, notes, tags = self.run.id, self.notes.toPlainText(), self.tags.text().split(",")
            self._services.set_notes(run_id, notes)  # the panel reloads from the store here
            self._services.set_tags(run_id, tags)


def _meta(run: RunSummary) -> str:
    parts = [run.format, run.status]
    if run.started_at:
        parts.append(f"started {fmt.when(run.started_at)}")
    parts.append(f"ingested {fmt.when(run.ingested_at)}")
    parts.append(f"{len(run.series)} metrics")
    return " · ".join(parts) + _plan(run) + f"<br><code>{html.escape(run.source_path)}</code>"


def _plan(run: RunSummary) -> str:
    """The exported plan the run was launched from, its prediction against the peak."""
    link = run.plan_link()
    if link is None:
        return ""
    text = f"<br>launched from plan <code>{html.escape(str(link['hash']))}</code>"
    if link["device_gib"] is not None:
        text += f": predicted {link['device_gib']:.1f} GiB per GPU"
    peak = link["peak_reserved_gib"] or link["peak_allocated_gib"]
    if peak is not None:
        text += f", recorded peak {peak:.1f} GiB"
    return text


def _table(model: QStandardItemModel, headers: tuple[str, ...], first_width: int) -> QTreeView:
    model.setHorizontalHeaderLabels(list(headers))
    view = QTreeView(rootIsDecorated=False, uniformRowHeights=True, alternatingRowColors=True)
    view.setModel(model)
    view.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
    view.setColumnWidth(0, first_width)
    return view


def _row(cells: tuple[str, ...], tip: str = "") -> list[QStandardItem]:
    items = [QStandardItem(c) for c in cells]
    for item in items[1:]:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        items[0].setToolTip(tip)
    return items
