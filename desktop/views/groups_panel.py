"""Under the runs table: the selected runs' groups as aggregate rows (count, mean ± std).

Shown while the runs are grouped (**Group by** on the plots); a click on a
group selects its runs. The figures are the same as ``headroom runs
--group-by`` prints.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

from desktop.compare_services import CompareServices
from desktop.models.group_model import GroupTableModel
from desktop.presenters import group_table
from desktop.services import AppServices


class GroupsPanel(QWidget):
    def __init__(self, services: AppServices, compare: CompareServices,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._compare = compare
        self.title = QLabel()
        self.title.setStyleSheet("color: #52606d;")
        self.model = GroupTableModel(self)
        self.table = QTableView(alternatingRowColors=True, wordWrap=False)
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.clicked.connect(self._select_group)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table)
        services.sig_selection_changed.connect(self.refresh)
        services.sig_runs_changed.connect(self.refresh)
        self._compare.sig_grouping_changed.connect(self._on_grouping)
        self._shown: list[group_table.GroupRow] = []

    def refresh(self) -> None:
        groups = self._compare.groups(list(self._services.selected))
        self._shown = group_table.rows(groups)
        self.model.set_groups(group_table.headers(groups), self._shown)
        count = sum(g.count for g in groups)
        self.title.setText(f"Grouped by {self._compare.grouping.by}: {len(groups)} groups of "
                           f"{count} selected runs (mean ± std)" if groups else
                           "Select runs to see their groups")

    def _on_grouping(self, grouping) -> None:
        self.refresh()
        self.setVisible(grouping.active)

    def _select_group(self, index: QModelIndex) -> None:
        if index.isValid():
            self._compare.select(list(self._shown[index.row()].run_ids))
