"""The findings list: a Qt model over the selected runs' diagnostic findings.

One row per finding (most severe first within each run): the severity icon
with the finding's title, its steps, the run, and the message in a sentence.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from desktop.presenters.findings import FindingRow
from desktop.widgets.icons import severity_icon

COLUMNS = ("Finding", "Steps", "Run", "Message")
TITLE, STEPS, RUN, MESSAGE = range(len(COLUMNS))
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
Index = QModelIndex | QPersistentModelIndex


class FindingsModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[FindingRow] = []

    def set_rows(self, rows: list[FindingRow]) -> bool:
        """Show ``rows``; False (and no reset, so the selection stays) when nothing changed."""
        if rows == self._rows:
            return False
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()
        return True

    def row(self, row: int) -> FindingRow:
        return self._rows[row]

    def row_of(self, key: tuple[int, int]) -> int | None:
        return next((i for i, r in enumerate(self._rows) if r.key == key), None)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

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
            return _RIGHT
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(COLUMNS)):
            return COLUMNS[section]
        return None
