"""The runs panel: filter bar over the runs table; selection goes to the services.

Editing commands (rename, tags, notes, delete) act on the selected runs and
are reached from the context menu and the main window's Edit menu.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QPoint, Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop import dialogs
from desktop.models.run_table_model import RUN_ID_ROLE, RunFilterProxy, RunTableModel
from desktop.presenters.run_columns import COLUMN_INDEX, COLUMNS, RunRow, make_rows
from desktop.services import AppServices, RunSummary
from desktop.settings import Settings
from desktop.views.query_box import QueryBox

ALL = "All"
# Widths that fit typical content without a resize pass over thousands of rows.
WIDTHS = {"name": 190, "status": 70, "severity": 30, "model": 110, "method": 56, "gpus": 136,
          "steps": 60, "format": 110, "started": 118, "tags": 120}


class RunsPanel(QWidget):
    def __init__(self, services: AppServices, settings: Settings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self.model = RunTableModel(self)
        self.proxy = RunFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_edit = QLineEdit(placeholderText="Filter: words, or a query such as "
                                                     "peak_gib > 40 and method == \"lora\"",
                                     clearButtonEnabled=True)
        self.filter_edit.setAcceptDrops(False)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self.filter_edit, self.filter_edit.clear,
                  context=Qt.ShortcutContext.WidgetShortcut)
        self.query = QueryBox(self.filter_edit, services, settings, self._on_filter)
        self.tag_combo = _combo("Tag")
        self.format_combo = _combo("Format")
        self.count_label = QLabel()
        self.table = self._make_table()
        self._layout()
        self.filter_edit.textChanged.connect(self._on_filter)
        self.tag_combo.currentIndexChanged.connect(self._on_filter)
        self.format_combo.currentIndexChanged.connect(self._on_filter)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        services.sig_runs_changed.connect(self.reload)
        services.sig_ingest_finished.connect(self._on_ingested)
        services.sig_ingest_finished.connect(self._note_new)
        services.sig_live_ingested.connect(self._note_new)
        self._select_after_load: list[int] = []
        self._announce: list[int] = []  # runs just ingested, to say if the filter hides them
        self._loads = 0  # reloads asked for: only the newest one's answer is shown

    def _make_table(self) -> QTableView:
        table = QTableView(self)
        table.setModel(self.proxy)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSortingEnabled(True)
        table.sortByColumn(COLUMN_INDEX["started"], Qt.SortOrder.DescendingOrder)
        table.setAlternatingRowColors(True)
        table.setWordWrap(False)
        table.setItemDelegateForColumn(COLUMN_INDEX["name"], _ElideMiddle(table))
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._context_menu)
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(24)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setDefaultSectionSize(72)
        header.setHighlightSections(False)
        header.setSectionsMovable(True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        for key, width in WIDTHS.items():
            table.setColumnWidth(COLUMN_INDEX[key], width)
        return table

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(self.tag_combo)
        bar.addWidget(self.format_combo)
        bar.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.query.error_label)
        layout.addWidget(self.table)

    # ---- Public API

    def reload(self) -> None:
        """Read the runs again (in the background) and show them, keeping the selection.

        Loads run in parallel and may finish out of order: an older answer is dropped.
        """
        self._loads += 1
        load = self._loads
        self._services.load_runs(lambda rows: self._on_loaded(rows) if load == self._loads
                                 else None, prepare=make_rows)

    def selected_runs(self) -> list[RunSummary]:
        return [self.model.run(self.proxy.mapToSource(i).row())
                for i in self.table.selectionModel().selectedRows()]

    def select_ids(self, run_ids: list[int]) -> None:
        selection = self.table.selectionModel()
        selection.clearSelection()
        flags = (QItemSelectionModel.SelectionFlag.Select
                 | QItemSelectionModel.SelectionFlag.Rows)
        first = None
        for run_id in run_ids:
            row = self.model.row_of(run_id)
            if row is None:
                continue
            index = self.proxy.mapFromSource(self.model.index(row, 0))
            if index.isValid():
                selection.select(index, flags)
                first = index if first is None else first
        if first is not None:
            self.table.scrollTo(first)

    def select_all(self) -> None:
        self.table.selectAll()

    def focus_filter(self) -> None:
        self.filter_edit.setFocus()
        self.filter_edit.selectAll()

    def rename_current(self) -> None:
        runs = self.selected_runs()
        if runs and (name := dialogs.ask_name(self, runs[0].name)):
            self._services.rename(runs[0].id, name)

    def edit_tags(self) -> None:
        runs = self.selected_runs()
        if not runs:
            return
        current = runs[0].tags if len(runs) == 1 else []
        tags = dialogs.ask_tags(self, current, len(runs))
        if tags is None:
            return
        if len(runs) == 1:
            self._services.set_tags(runs[0].id, tags)
        else:
            self._services.add_tags([r.id for r in runs], tags)

    def edit_notes(self) -> None:
        runs = self.selected_runs()
        if runs and (notes := dialogs.ask_notes(self, runs[0].notes)) is not None:
            self._services.set_notes(runs[0].id, notes)

    def choose_colour(self) -> None:
        """The selected runs' colour in every view, from a colour dialog."""
        runs = self.selected_runs()
        if runs and (colour := dialogs.ask_colour(self, runs[0].colour)):
            for run in runs:
                self._services.set_colour(run.id, colour)

    def merge_selected(self) -> None:
        """One job of the selected runs: the first selected takes the others in."""
        if len(self._services.selected) > 1:
            self._services.merge_runs(list(self._services.selected))

    def delete_selected(self) -> None:
        runs = self.selected_runs()
        if runs and dialogs.confirm_delete(self, [r.name for r in runs]):
            self._services.delete_runs([r.id for r in runs])

    # ---- Slots

    def _on_loaded(self, rows: list[RunRow]) -> None:
        keep = self._select_after_load or list(self._services.selected)
        self._select_after_load = []
        self.model.set_rows(rows)
        self.query.set_metrics({m for row in rows for m in row.run.series})
        _refill(self.tag_combo, self.model.tags())
        _refill(self.format_combo, self.model.formats())
        self._on_filter()
        self._announce_hidden()
        if not keep and rows:
            keep = [rows[0].run.id]
        self.select_ids(keep)

    def _on_ingested(self, report) -> None:
        """Show what was just ingested: those runs become the selection."""
        ids = [r.run_id for r in report.results if r.run_id is not None and r.status != "error"]
        self._select_after_load = list(dict.fromkeys(ids))[:8]

    def _note_new(self, report) -> None:
        """Runs an ingest (a watched folder's too) just added: the next load checks the filter."""
        self._announce += [r.run_id for r in report.results if r.status == "ingested"]

    def _announce_hidden(self) -> None:
        """A filter that hides runs just added says so, once, in the status bar."""
        new, self._announce = self._announce, []
        hidden = [i for i in dict.fromkeys(new) if (row := self.model.row_of(i)) is not None
                  and not self.proxy.mapFromSource(self.model.index(row, 0)).isValid()]
        if hidden:
            self._services.sig_message.emit(
                f"The filter hides {len(hidden)} new run{'s' * (len(hidden) != 1)}: "
                "press Escape in the filter box to show every run")

    def _on_filter(self) -> None:
        self.proxy.set_filters(self.query.words(), self.tag_combo.currentData(),
                               self.format_combo.currentData(), self.query.query(),
                               self.query.extras)
        self._update_count()

    def _on_selection(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        chosen = [self.proxy.data(i, RUN_ID_ROLE) for i in rows]
        before = [i for i in self._services.selected if i in chosen]
        self._services.select(before + [i for i in chosen if i not in before])

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count_label.setText(f"{total} runs" if shown == total else f"{shown} of {total} runs")

    def _context_menu(self, pos: QPoint) -> None:
        if not self.selected_runs():
            return
        menu = QMenu(self)
        menu.addAction("Rename…", self.rename_current)
        menu.addAction("Edit tags…", self.edit_tags)
        menu.addAction("Notes…", self.edit_notes)
        menu.addAction("Colour…", self.choose_colour)
        if len(self.selected_runs()) > 1:
            menu.addAction("Merge into One Run", self.merge_selected)
        menu.addSeparator()
        menu.addAction("Re-run diagnostics", lambda: self._services.rediagnose(
            [r.id for r in self.selected_runs()]))
        if self._services.sizing_available():
            menu.addAction("Size a run like this…",
                           lambda: self._services.request_sizing(self._services.selected[-1]))
        menu.addSeparator()
        menu.addAction("Delete from database…", self.delete_selected)
        menu.exec(self.table.viewport().mapToGlobal(pos))


    def _header_menu(self, pos: QPoint) -> None:
        """Show or hide columns (the window remembers the header's state)."""
        header = self.table.horizontalHeader()
        menu = QMenu(self)
        for i, column in enumerate(COLUMNS):
            action = menu.addAction(column.title)
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(i))
            action.setEnabled(i != 0)  # the name always shows
            action.toggled.connect(lambda on, i=i: header.setSectionHidden(i, not on))
        menu.exec(header.mapToGlobal(pos))


class _ElideMiddle(QStyledItemDelegate):
    """Run names often differ only at the end (lr5e-3 vs lr1e-3): keep both ends visible."""

    def initStyleOption(self, option, index) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle


def _combo(what: str) -> QComboBox:
    combo = QComboBox()
    combo.addItem(f"{ALL} {what.lower()}s", None)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


def _refill(combo: QComboBox, values: list[str]) -> None:
    """New choices, keeping the chosen one when it still exists."""
    current = combo.currentData()
    combo.blockSignals(True)
    while combo.count() > 1:
        combo.removeItem(1)
    for value in values:
        combo.addItem(value, value)
    combo.setCurrentIndex(max(combo.findData(current), 0) if current is not None else 0)
    combo.blockSignals(False)
