"""A searchable tree of a run's hyperparameters and config (nested dicts and lists)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QLineEdit, QTreeView, QVBoxLayout, QWidget

from desktop.presenters.formatting import setting


class ConfigTree(QWidget):
    """Keys and values; the search box keeps rows whose key or value matches, with their parents."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QStandardItemModel(0, 2, self)
        self.model.setHorizontalHeaderLabels(["Key", "Value"])
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setRecursiveFilteringEnabled(True)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.search = QLineEdit(placeholderText="Search keys and values…", clearButtonEnabled=True)
        self.search.textChanged.connect(self._on_search)
        self.tree = QTreeView(uniformRowHeights=True, alternatingRowColors=True)
        self.tree.setModel(self.proxy)
        self.tree.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
        self.tree.setColumnWidth(0, 280)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(self.tree)

    def set_config(self, config: dict[str, Any]) -> None:
        self.model.removeRows(0, self.model.rowCount())
        _fill(self.model.invisibleRootItem(), config)
        self.tree.expandToDepth(0)
        self._on_search(self.search.text())

    def _on_search(self, typed: str) -> None:
        self.proxy.setFilterFixedString(typed.strip())
        if typed.strip():
            self.tree.expandAll()


def _fill(parent: QStandardItem, value: dict | list) -> None:
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in pairs:
        key_item = QStandardItem(str(key))
        nested = isinstance(child, (dict, list)) and child and len(str(child)) > 60
        value_item = QStandardItem("" if nested else setting(child))
        value_item.setToolTip(value_item.text())
        parent.appendRow([key_item, value_item])
        if nested:
            _fill(key_item, child)
