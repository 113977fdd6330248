"""What Headroom's table models share: a list of presenter rows, one column per entry.

Subclasses give their column count and their ``data``/``headerData``; rows are
replaced wholesale (a reset), which is cheap because presenters computed the
cells beforehand.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

Row = TypeVar("Row")
Index = QModelIndex | QPersistentModelIndex
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class RowsModel(QAbstractTableModel, Generic[Row]):
    """A flat table over ``list[Row]``; ``column_count`` columns."""

    column_count = 0

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []

    def _replace(self, rows: list[Row]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def row(self, row: int) -> Row:
        return self._rows[row]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self.column_count
