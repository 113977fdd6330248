"""The result page's plans: a sortable table in sections, every cell explained in its tooltip.

Sections keep the planner's levels of change in their order whatever column
sorts the plans inside them; a click on a plan says which (its rank) so the
chart and the breakdown follow it.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from desktop.presenters import sizing_plans
from desktop.presenters.sizing_plans import Row, Section

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
RANK_WIDTH = 48  # section titles span this column: it is not sized to its contents
MAX_WIDTH = 170  # a column sized to its contents stays this narrow (its tooltip says all)
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class PlansTable(QTreeWidget):
    sig_selected = Signal(int)
    """A plan was chosen: its rank (1 for the planner's first)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, rootIsDecorated=False, alternatingRowColors=True,
                         uniformRowHeights=True, itemsExpandable=False)
        self.setSortingEnabled(True)
        self.header().setStretchLastSection(True)
        self.header().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.currentItemChanged.connect(self._on_current)

    def show_sections(self, sections: list[Section]) -> None:
        """Fill the table: one bold row per section, its plans under it, in rank order."""
        self.blockSignals(True)
        self.setSortingEnabled(False)
        self.clear()
        self.setHeaderLabels(list(sizing_plans.HEADERS))
        for column, tip in sizing_plans.HEADER_TIPS.items():
            self.headerItem().setToolTip(column, tip)
        for order, section in enumerate(sections):
            head = SectionItem(order, f"{section.title} ({len(section.rows)})")
            self.addTopLevelItem(head)
            head.setFirstColumnSpanned(True)
            head.addChildren([PlanItem(r) for r in section.rows])
            head.setExpanded(True)
        self.setSortingEnabled(True)
        self.sortByColumn(sizing_plans.RANK, Qt.SortOrder.AscendingOrder)
        self._fit_columns()
        self.blockSignals(False)

    def _fit_columns(self) -> None:
        """Columns as wide as what they show (capped), Changes taking what is left."""
        self.setColumnWidth(sizing_plans.RANK, RANK_WIDTH)
        for column in range(sizing_plans.RANK + 1, sizing_plans.CHANGES):
            self.resizeColumnToContents(column)
            self.setColumnWidth(column, min(self.columnWidth(column), MAX_WIDTH))

    def select(self, rank: int) -> None:
        """Make the plan of this rank current (quietly: the caller redraws)."""
        for item in self.plan_items():
            if item.row.rank == rank:
                self.blockSignals(True)
                self.setCurrentItem(item)
                self.blockSignals(False)
                return

    def rank_at(self, pos: QPoint) -> int | None:
        """The rank of the plan row at ``pos`` (viewport coordinates); None off the plans."""
        item = self.itemAt(pos)
        return item.row.rank if isinstance(item, PlanItem) else None

    def plan_items(self) -> list[PlanItem]:
        """The plan rows in the order shown."""
        return [self.topLevelItem(i).child(j) for i in range(self.topLevelItemCount())
                for j in range(self.topLevelItem(i).childCount())]

    def _on_current(self, item: QTreeWidgetItem | None, _previous) -> None:
        if isinstance(item, PlanItem):
            self.sig_selected.emit(item.row.rank)


class SectionItem(QTreeWidgetItem):
    """A section's title row: stays in its place whichever way the plans sort."""

    def __init__(self, order: int, title: str) -> None:
        super().__init__([title])
        self.order = order
        font = QFont()
        font.setBold(True)
        self.setFont(0, font)
        self.setFlags(Qt.ItemFlag.ItemIsEnabled)

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        ascending = self.treeWidget().header().sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
        return (self.order < other.order) == ascending


class PlanItem(QTreeWidgetItem):
    """One plan; sorts by the presenter's key for the column, not by the text shown."""

    def __init__(self, row: Row) -> None:
        super().__init__(list(row.cells))
        self.row = row
        for column, (key, tip) in enumerate(zip(row.keys, row.tips, strict=True)):
            self.setData(column, SORT_ROLE, key)
            self.setToolTip(column, tip)
            if column in sizing_plans.NUMERIC:
                self.setTextAlignment(column, RIGHT)

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        column = self.treeWidget().sortColumn()
        return self.data(column, SORT_ROLE) < other.data(column, SORT_ROLE)
