"""The run's shape as an editable tree: field, value, and where the value came from.

What the log did not say is left blank for the user to complete (the sizing fit
needs it); an edit is stored with "you" as its source and survives re-ingest.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate, QTreeView, QWidget

from core.shape import RunShape
from desktop.presenters import shape_fields

NAME_ROLE = Qt.ItemDataRole.UserRole + 1
CHOICES_ROLE = Qt.ItemDataRole.UserRole + 2
_UNKNOWN = QBrush(QColor("#9aa5b1"))
_GROUP = QBrush(QColor("#eef2f6"))
Index = QModelIndex | QPersistentModelIndex


class ShapeEditor(QTreeView):
    sig_field_edited = Signal(str, str)
    """Field name and the text the user entered (parsing is the caller's)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model_ = QStandardItemModel(0, 3, self)
        self.model_.setHorizontalHeaderLabels(["Field", "Value", "Source"])
        self.setModel(self.model_)
        self.setItemDelegateForColumn(1, _ChoiceDelegate(self))
        self.setAlternatingRowColors(True)
        self.setUniformRowHeights(True)
        self.setEditTriggers(QTreeView.EditTrigger.DoubleClicked
                             | QTreeView.EditTrigger.EditKeyPressed
                             | QTreeView.EditTrigger.SelectedClicked)
        self.setColumnWidth(0, 200)
        self.setColumnWidth(1, 220)
        self.model_.itemChanged.connect(self._on_changed)
        self._filling = False

    def set_shape(self, shape: RunShape) -> None:
        self._filling = True
        self.model_.removeRows(0, self.model_.rowCount())
        for group, rows in shape_fields.groups(shape):
            self.model_.appendRow(_group_row(group, rows))
        self.expandAll()
        self._filling = False

    def _on_changed(self, item: QStandardItem) -> None:
        """Report an edit once Qt has finished with the item (the receiver rebuilds the tree)."""
        if not self._filling and item.column() == 1:
            name, typed = item.data(NAME_ROLE), item.text()
            QTimer.singleShot(0, lambda: self.sig_field_edited.emit(name, typed))


def _group_row(group: str, rows: list[shape_fields.FieldRow]) -> list[QStandardItem]:
    head = [QStandardItem(group), QStandardItem(), QStandardItem()]
    for item in head:
        item.setEditable(False)
        item.setBackground(_GROUP)
    font = head[0].font()
    font.setBold(True)
    head[0].setFont(font)
    for row in rows:
        head[0].appendRow(_field_row(row))
    return head


def _field_row(row: shape_fields.FieldRow) -> list[QStandardItem]:
    label, value, source = (QStandardItem(t) for t in (row.label, row.text, row.source))
    label.setEditable(False)
    source.setEditable(False)
    label.setToolTip(row.name)
    value.setData(row.name, NAME_ROLE)
    value.setData(list(row.choices), CHOICES_ROLE)
    value.setToolTip("Double-click to set" + (f": {', '.join(row.choices)}" if row.choices else ""))
    if row.value is None:
        label.setForeground(_UNKNOWN)
    return [label, value, source]


class _ChoiceDelegate(QStyledItemDelegate):
    """A drop-down for fields with fixed choices (method, precision...); a text box otherwise."""

    def createEditor(self, parent: QWidget, option, index: Index) -> QWidget:
        choices = index.data(CHOICES_ROLE)
        if not choices:
            return super().createEditor(parent, option, index)
        combo = QComboBox(parent)
        combo.addItems(["", *choices])
        return combo

    def setEditorData(self, editor: QWidget, index: Index) -> None:
        if isinstance(editor, QComboBox):
            editor.setCurrentText(index.data() or "")
        else:
            super().setEditorData(editor, index)

    def setModelData(self, editor: QWidget, model, index: Index) -> None:
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText())
        else:
            super().setModelData(editor, model, index)
