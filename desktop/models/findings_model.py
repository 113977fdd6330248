"""The findings list: a Qt model over the selected runs' diagnostic findings.

One row per finding (most severe first within each run): the severity icon
with the finding's title, its steps, the run, and the message in a sentence.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.models.rows import RIGHT, Index, RowsModel
from desktop.presenters.findings import FindingItem
from desktop.widgets.icons import severity_icon

COLUMNS = ("Finding", "Steps", "Run", "Message")
TITLE, STEPS, RUN, MESSAGE = range(len(COLUMNS))


class FindingsModel(RowsModel[FindingItem]):
    column_count = len(COLUMNS)

    def set_rows(self, rows: list[FindingItem]) -> bool:
        """Show ``rows``; False (and no reset, so the selection stays) when nothing changed."""
        if rows == self._rows:
            return False
        self._replace(rows)
        return True

    def row_of(self, key: tuple[int, int]) -> int | None:
        return next((i for i, r in enumerate(self._rows) if r.key == key), None)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (row.title, row.steps, row.run_name, row.finding.message)[column]
        if role == Qt.ItemDataRole.DecorationRole and column == TITLE:
            return severity_icon(row.finding.severity)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{row.finding.severity}: {row.finding.message}"
        if role == Qt.ItemDataRole.TextAlignmentRole and column == STEPS:
            return RIGHT
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(COLUMNS)):
            return COLUMNS[section]
        return None
