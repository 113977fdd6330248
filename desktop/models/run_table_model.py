"""The runs table: a Qt model over run summaries, and a proxy that filters it.

Rows are computed once per load (:mod:`desktop.presenters.run_columns`), on
the worker that reads the runs, so ``data()`` is a tuple lookup. Sorting
happens in the source model over all rows in one Python sort (the proxy
forwards it), which keeps a click on a header instant for thousands of runs;
the proxy only filters.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor

from desktop.models.rows import RIGHT, Index, RowsModel
from desktop.presenters import live_status
from desktop.presenters.run_columns import (
    COLUMN_INDEX,
    COLUMNS,
    RunRow,
    make_rows,
    matches,
    sort_rows,
)
from desktop.widgets.icons import severity_icon
from tracker.model import RunSummary
from tracker.query import Query

RUN_ID_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
_CRASHED = QColor("#c62828")
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
SEVERITY = COLUMN_INDEX["severity"]
STATUS = COLUMN_INDEX["status"]
_STATUS_COLOURS = {status: QColor(colour) for status, colour in live_status.COLOURS.items()}


class RunTableModel(RowsModel[RunRow]):
    """One row per run, one column per :data:`COLUMNS` entry."""

    column_count = len(COLUMNS)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._sort: tuple[int, bool] | None = None

    # ---- Public API

    def set_runs(self, runs: list[RunSummary]) -> None:
        """Replace the rows (keeping the current sort order)."""
        self.set_rows(make_rows(runs))

    def set_rows(self, rows: list[RunRow]) -> None:
        """Replace the rows with ones :func:`make_rows` made (on a worker, for thousands of runs)."""
        self._replace(rows if self._sort is None else sort_rows(rows, *self._sort))

    def run(self, row: int) -> RunSummary:
        return self._rows[row].run

    def row_of(self, run_id: int) -> int | None:
        return next((i for i, r in enumerate(self._rows) if r.run.id == run_id), None)

    def formats(self) -> list[str]:
        return sorted({r.run.format for r in self._rows})

    def tags(self) -> list[str]:
        return sorted({t for r in self._rows for t in r.run.tags})

    # ---- Qt model interface

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return row.texts[column]
        if role == RUN_ID_ROLE:
            return row.run.id
        if role == SORT_ROLE:
            return row.keys[column]
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return RIGHT if COLUMNS[column].numeric else _LEFT
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, column)
        if role == Qt.ItemDataRole.DecorationRole and column == SEVERITY:
            return severity_icon(row.run.severity)
        if role == Qt.ItemDataRole.DecorationRole and column == 0 and row.run.colour:
            return _colour(row.run.colour)  # the run's colour in the plots, beside its name
        if role == Qt.ItemDataRole.ForegroundRole and row.run.status == "crashed" and column == 0:
            return _CRASHED
        if role == Qt.ItemDataRole.ForegroundRole and column == STATUS:
            return _STATUS_COLOURS.get(row.run.status)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section].title
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section].tip or None
        if role == Qt.ItemDataRole.DecorationRole and section == SEVERITY:
            return severity_icon("warning")
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return RIGHT if COLUMNS[section].numeric else _LEFT
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(COLUMNS):
            return
        self._sort = (column, order == Qt.SortOrder.DescendingOrder)
        self.layoutAboutToBeChanged.emit()
        old = {id(r): i for i, r in enumerate(self._rows)}
        self._rows = sort_rows(self._rows, *self._sort)
        moved = {old[id(r)]: i for i, r in enumerate(self._rows)}
        self._move_persistent(moved)
        self.layoutChanged.emit()

    # ---- Private API

    def _move_persistent(self, moved: dict[int, int]) -> None:
        indexes = self.persistentIndexList()
        self.changePersistentIndexList(
            indexes, [self.index(moved[i.row()], i.column()) for i in indexes]
        )

    @staticmethod
    def _tooltip(row: RunRow, column: int) -> str | None:
        run = row.run
        if COLUMNS[column].key == "model":
            return run.shape.model
        if column == STATUS:
            return live_status.tooltip(run, datetime.now(UTC))
        if column == SEVERITY:
            return f"Worst finding: {run.severity}" if run.severity else "No findings"
        if column == 0:
            lines = [run.name, run.source_path, f"status: {run.status}"]
            return "\n".join(lines + ([run.notes] if run.notes else []))
        return row.texts[column] or None


@lru_cache(maxsize=64)
def _colour(name: str) -> QColor:
    return QColor(name)


class RunFilterProxy(QSortFilterProxyModel):
    """Filters by words (name, model, format, tags, path, notes) or a query, one tag and one
    format."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._text = ""
        self._tag: str | None = None
        self._format: str | None = None
        self._query: Query | None = None
        self._extras: dict[int, dict] = {}

    def set_filters(self, text: str, tag: str | None, fmt: str | None,
                    query: Query | None = None, extras: dict[int, dict] | None = None) -> None:
        """Filter by words, a tag and a format (None: any), and a query (with the runs'
        config and summary when it reads them)."""
        self.beginFilterChange()
        self._text, self._tag, self._format = text, tag, fmt
        self._query, self._extras = query, extras or {}
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        row = self.sourceModel().row(source_row)
        if not matches(row, self._text, self._tag, self._format):
            return False
        return self._query is None or self._query.matches(row.run, self._extras.get(row.run.id))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sorting is the source model's: one Python sort, not a C++ -> Python call per pair."""
        self.sourceModel().sort(column, order)
