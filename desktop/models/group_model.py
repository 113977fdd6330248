"""The groups table: one row per run group, its count and the mean ± std of each summary figure."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop.models.rows import RIGHT, Index, RowsModel
from desktop.presenters.group_table import GroupRow

_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)


class GroupTableModel(RowsModel[GroupRow]):
    """Rows of :func:`desktop.presenters.group_table.rows`, under their headers."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._headers: list[str] = []

    def set_groups(self, headers: list[str], rows: list[GroupRow]) -> None:
        self.beginResetModel()
        self._headers, self._rows = list(headers), list(rows)
        self.column_count = len(headers)
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return row.texts[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.tips[index.column()] or None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _LEFT if index.column() == 0 else RIGHT
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(self._headers)):
            return self._headers[section]
        return None
