"""Compare the selected runs: the settings that differ, side by side, then the results."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QTreeView, QVBoxLayout, QWidget

from desktop.compare_services import CompareServices
from desktop.presenters import compare
from desktop.presenters.plot_data import colour
from desktop.services import AppServices

SELECT_TWO = "Select two or more runs to compare their settings."
_DIFFERS = QBrush(QColor("#fff4ce"))


class CompareView(QWidget):
    def __init__(self, services: AppServices, compare: CompareServices,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._stale = True
        self.only_differences = QCheckBox("Only settings that differ", checked=True)
        self.only_differences.toggled.connect(self.refresh)
        self.summary = QLabel(SELECT_TWO)
        self.summary.setStyleSheet("color: #52606d;")
        self.model = QStandardItemModel(self)
        self.tree = QTreeView(uniformRowHeights=True, alternatingRowColors=True)
        self.tree.setModel(self.model)
        self.tree.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.only_differences)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.tree)
        services.sig_selection_changed.connect(self.refresh)
        services.sig_runs_changed.connect(self.refresh)
        self._compare = compare
        self._compare.sig_grouping_changed.connect(self.refresh)

    def refresh(self) -> None:
        """Rebuild the table; while the tab is hidden, only note that it is out of date."""
        if not self.isVisible():
            self._stale = True
            return
        self._stale = False
        runs = self._services.runs(list(self._services.selected))
        configs = self._services.configs([r.id for r in runs])
        runs = [r for r in runs if r.id in configs]  # less any merged away in between
        self.model.clear()
        if len(runs) < 2:
            self.summary.setText(SELECT_TWO)
            return
        table = [compare.CompareRun(r, configs[r.id]) for r in runs]
        groups = self._compare.groups([r.id for r in runs])
        if len(groups) > 1:
            self._compare_groups(groups, {c.summary.id: c for c in table})
            return
        rows = compare.compare(table, self.only_differences.isChecked())
        self._set_headers([r.name for r in runs], [r.colour for r in runs])
        self._fill(rows, highlight=not self.only_differences.isChecked())
        differing = sum(r.differs for r in rows if r.section != "Results")
        self.summary.setText(f"{len(runs)} runs · {differing} settings differ")

    def _compare_groups(self, groups, runs: dict) -> None:
        """Columns are the groups: results as mean ± std, settings as what members share."""
        table = [compare.CompareGroup(g, [runs[i] for i in g.run_ids]) for g in groups]
        rows = compare.compare_groups(table, self.only_differences.isChecked())
        self._set_headers([f"{g.key} ({g.count})" for g in groups],
                          [colour(i) for i in range(len(groups))])
        self._fill(rows, highlight=not self.only_differences.isChecked())
        differing = sum(r.differs for r in rows if r.section != "Results")
        differ = "1 setting differs" if differing == 1 else f"{differing} settings differ"
        self.summary.setText(f"{len(groups)} groups of {len(runs)} runs "
                             f"({self._compare.grouping.by}) · {differ}")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    def _set_headers(self, names: list[str], colours: list[str]) -> None:
        self.model.setHorizontalHeaderLabels(["Setting", *names])
        for i, shade in enumerate(colours):
            # Not horizontalHeaderItem(): a wrapper of an item the model made goes stale when
            # the model replaces it, and PySide then crashes freeing a new item at that address.
            self.model.setHeaderData(i + 1, Qt.Orientation.Horizontal, QBrush(QColor(shade)),
                                     Qt.ItemDataRole.ForegroundRole)
        self.tree.setColumnWidth(0, 240)
        metrics = self.tree.fontMetrics()
        for i, name in enumerate(names):
            width = metrics.horizontalAdvance(name) + 28
            self.tree.setColumnWidth(i + 1, min(320, max(150, width)))

    def _fill(self, rows: list[compare.CompareRow], highlight: bool) -> None:
        """Sections of rows; with every setting shown, those that differ are highlighted."""
        sections: dict[str, QStandardItem] = {}
        for row in rows:
            if row.section not in sections:
                head = QStandardItem(row.section)
                font = head.font()
                font.setBold(True)
                head.setFont(font)
                sections[row.section] = head
                self.model.appendRow(head)
            items = [QStandardItem(row.key), *(QStandardItem(v) for v in row.values)]
            for item in items[1:]:
                item.setToolTip(item.text())
                if highlight and row.differs:
                    item.setBackground(_DIFFERS)
            sections[row.section].appendRow(items)
        self.tree.expandAll()
