"""The Calibration tab: how well the memory model, fitted to your runs, predicts them.

A headline says whether the wizard trusts its calibrated figures and why;
the scatter shows each run's held-out prediction against its recorded peak;
the groups tree shows the coefficients each context learned, shrunk toward
its parent, with held-out and uncalibrated errors; the runs table lists every
reading, flags outliers, and excludes or includes runs (kept in the store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.presenters.calibration_view import (
    GroupRow,
    Point,
    Skipped,
    Summary,
    coefficient_labels,
    group_title,
)
from desktop.sizing_services import SizingServices

if TYPE_CHECKING:
    from desktop.views.calibration_plot import CalibrationPlot

RUN_HEADERS = ("Run", "Reading", "Recorded GiB", "Held-out GiB", "Error", "Uncalibrated GiB",
               "Note", "Group")
GROUP_HEADERS = ("Group", "Runs", "Held-out error", "Uncalibrated error", "Verdict",
                 *coefficient_labels())
NOTE, VERDICT = RUN_HEADERS.index("Note"), GROUP_HEADERS.index("Verdict")
RUN_ROLE = Qt.ItemDataRole.UserRole
STATE_ROLE = Qt.ItemDataRole.UserRole + 1  # "fit", "excluded" or "skipped"
GOOD, WARN, MUTED = QColor("#2f7d32"), QColor("#8d6e00"), QColor("#7b8794")
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class CalibrationPanel(QWidget):
    def __init__(self, sizing: SizingServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._sizing = sizing
        self.summary: Summary | None = None
        self.headline = QLabel("Fitting the memory model to your runs…", wordWrap=True,
                               objectName="headline")
        self.headline.setStyleSheet("font-size: 13px; padding: 4px 2px;")
        self._plot: CalibrationPlot | None = None
        self._plot_slot = QWidget()  # the plot goes here when first needed (it loads pyqtgraph)
        QVBoxLayout(self._plot_slot).setContentsMargins(0, 0, 0, 0)
        self.groups = _tree(GROUP_HEADERS, (190, 40, 90, 120, 90, *([84] * 5)))
        self.runs = _tree(RUN_HEADERS, (230, 70, 96, 90, 50, 112, 250))
        self.runs.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.runs.setSortingEnabled(True)
        self.exclude = QPushButton("Exclude from Fit")
        self.include = QPushButton("Include in Fit")
        self.skipped = QLabel(wordWrap=True)
        self.skipped.setStyleSheet("color: #616e7c;")
        self._layout()
        self.exclude.clicked.connect(lambda: self._set_excluded(True))
        self.include.clicked.connect(lambda: self._set_excluded(False))
        self.runs.itemSelectionChanged.connect(self._enable_buttons)
        self._sizing.sig_calibration_changed.connect(self.show_summary)
        self._enable_buttons()

    def _layout(self) -> None:
        top = QSplitter(Qt.Orientation.Horizontal, childrenCollapsible=False)
        top.addWidget(self._plot_slot)
        top.addWidget(self.groups)
        top.setSizes([520, 560])
        bottom = QWidget()
        table = QVBoxLayout(bottom)
        table.setContentsMargins(0, 0, 0, 0)
        table.addWidget(self.runs, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.skipped, 1)
        buttons.addWidget(self.exclude)
        buttons.addWidget(self.include)
        table.addLayout(buttons)
        split = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setSizes([430, 300])
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(split, 1)

    def showEvent(self, event) -> None:
        """The fit is computed when first looked at (and kept fresh after that)."""
        super().showEvent(event)
        summary = self._sizing.calibration()
        if summary is not None and summary is not self.summary:
            self.show_summary(summary)

    @property
    def plot(self) -> CalibrationPlot:
        """Predicted against recorded peaks, made when the fit is first shown."""
        if self._plot is None:
            from desktop.views.calibration_plot import CalibrationPlot

            self._plot = CalibrationPlot()
            self._plot.sig_run_clicked.connect(self.select_run)
            self._plot_slot.layout().addWidget(self._plot)
        return self._plot

    # ---- Public API

    def show_summary(self, summary: Summary) -> None:
        self.summary = summary
        self.headline.setText(summary.headline)
        self.plot.show_points(summary.points)
        self._fill_groups(summary.groups)
        self._fill_runs(summary.points, summary.skipped)
        no_peak = (f"{summary.no_peak} other run{'s' if summary.no_peak != 1 else ''} recorded "
                   "no memory peak. " if summary.no_peak else "")
        self.skipped.setText(no_peak + "Excluded runs stay out of every fit until included.")
        self._enable_buttons()

    def select_run(self, run_id: int) -> None:
        self.runs.clearSelection()
        for i in range(self.runs.topLevelItemCount()):
            item = self.runs.topLevelItem(i)
            if item.data(0, RUN_ROLE) == run_id:
                item.setSelected(True)
                self.runs.scrollToItem(item)

    def selected_runs(self) -> list[int]:
        return list(dict.fromkeys(i.data(0, RUN_ROLE) for i in self.runs.selectedItems()))

    # ---- Private API

    def _fill_groups(self, groups: list[GroupRow]) -> None:
        self.groups.clear()
        items: dict[tuple[str, ...], QTreeWidgetItem] = {}
        for g in groups:  # coarsest first, so a parent is always there before its children
            title = group_title(g.label)
            cells = [title.split(" × ")[-1], str(g.runs), _pct(g.held_out_error), _pct(g.prior_error),
                     g.short, *(f"{v:.2f}" for v in g.coefficients)]
            item = QTreeWidgetItem(cells)
            item.setToolTip(0, title)
            item.setToolTip(VERDICT, g.verdict)
            item.setForeground(VERDICT, GOOD if g.trusted else WARN)
            parent = items.get(g.key[:-1]) if g.key else None
            if parent is None:
                self.groups.addTopLevelItem(item)
            else:
                parent.addChild(item)
            items[g.key] = item
        self.groups.expandAll()

    def _fill_runs(self, points: list[Point], skipped: list[Skipped]) -> None:
        self.runs.setSortingEnabled(False)
        self.runs.clear()
        for q in points:
            error = q.error
            item = _RunItem([q.name, q.counter, _gib(q.recorded_gib), _gib(q.predicted_gib),
                             "" if error is None else f"{error:+.0%}", _gib(q.analytical_gib),
                             q.status, group_title(q.group)])
            if q.outlier:
                item.setForeground(NOTE, QBrush(QColor("#b3261e")))
            self._add_run(item, q.run_id, "fit")
        for s in skipped:
            item = _RunItem([s.name, "", "", "", "", "", s.reason, ""])
            for column in range(len(RUN_HEADERS)):
                item.setForeground(column, MUTED)
            font = QFont(item.font(0))
            font.setItalic(True)
            item.setFont(0, font)
            self._add_run(item, s.run_id, "excluded" if s.excluded else "skipped")
        self.runs.setSortingEnabled(True)

    def _add_run(self, item: QTreeWidgetItem, run_id: int, state: str) -> None:
        item.setData(0, RUN_ROLE, run_id)
        item.setData(0, STATE_ROLE, state)
        item.setToolTip(NOTE, item.text(NOTE))
        for column in range(2, 6):
            item.setTextAlignment(column, RIGHT)
        self.runs.addTopLevelItem(item)

    def _enable_buttons(self) -> None:
        chosen = self.runs.selectedItems()
        states = {i.data(0, STATE_ROLE) for i in chosen}
        self.exclude.setEnabled("fit" in states)
        self.include.setEnabled("excluded" in states)

    def _set_excluded(self, excluded: bool) -> None:
        ids = self.selected_runs()
        if ids:
            self.headline.setText("Fitting again…")
            self._sizing.set_excluded(ids, excluded)


class _RunItem(QTreeWidgetItem):
    """Sorts figures as numbers (10.5 after 9.8), text as text, blanks last."""

    def __lt__(self, other: QTreeWidgetItem) -> bool:
        column = self.treeWidget().sortColumn()
        mine, theirs = _number(self.text(column)), _number(other.text(column))
        if mine is None or theirs is None:
            return (mine is None, self.text(column)) < (theirs is None, other.text(column))
        return mine < theirs


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip("%"))
    except ValueError:
        return None


def _tree(headers: tuple[str, ...], widths: tuple[int, ...]) -> QTreeWidget:
    tree = QTreeWidget(uniformRowHeights=True, alternatingRowColors=True)
    tree.setHeaderLabels(list(headers))
    for column, width in enumerate(widths):
        tree.setColumnWidth(column, width)
    return tree


def _gib(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
