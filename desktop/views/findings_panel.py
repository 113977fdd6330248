"""The findings panel: what the diagnostics found in the selected runs, and why.

Selecting a finding shows its cause, remedy and evidence numbers beside the
list and asks the plots to zoom to its steps. The panel shows itself the first
time a selected run has findings; once the user hides it, it stays hidden until
they show it again from the View menu.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSize, Qt, QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.diagnostics import Finding
from desktop.models.findings_model import MESSAGE, RUN, STEPS, TITLE, FindingsModel
from desktop.presenters import findings as present
from desktop.presenters.findings import FindingItem
from desktop.presenters.plot_marks import Focus
from desktop.services import AppServices
from desktop.views.fix_dialog import FixDialog

NOTHING_FOUND = ("<p><b>No findings.</b></p><p style='color:#52606d'>The diagnostics looked for "
                 "out-of-memory crashes, NaN/Inf losses, loss spikes and plateaus, eval "
                 "diverging from train, rebounds after a resume, LR schedule jumps, gradient "
                 "explosions, throughput drops and memory headroom, and saw none of them.</p>")
PICK_ONE = "<p style='color:#52606d'>Select a finding to see why it was raised.</p>"
FIX_TIP = ("The cheapest changes that fit this run's GPUs, checked against the failure, each "
           "with its config")
LIST_ROWS, ROW_HEIGHT, SCROLLBAR = 6, 24, 8


class FindingsPanel(QWidget):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._names: dict[int, str] = {}
        self._dismissed = False  # the user hid the panel: do not show it again unasked
        self.model = FindingsModel(self)
        self._make_widgets()
        self._layout()
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        services.sig_selection_changed.connect(self.reload)
        services.sig_findings_changed.connect(self._on_findings_changed)
        services.sig_runs_changed.connect(self.reload)

    def _make_widgets(self) -> None:
        self.heading = QLabel("<b>Findings</b>")
        self.rerun_button = QPushButton("Re-run diagnostics", enabled=False,
                                        toolTip="Diagnose the selected runs again")
        self.rerun_button.clicked.connect(self.rerun)
        self.close_button = QToolButton(text="✕", autoRaise=True, toolTip="Hide the findings")
        self.close_button.clicked.connect(self.hide)
        self.table = _findings_table(self.model)
        self.why = QTextBrowser(openExternalLinks=False)
        self.why.setHtml(PICK_ONE)
        self.fix_button = QPushButton("Find the Smallest Fix…", toolTip=FIX_TIP)
        self.fix_button.clicked.connect(self.open_fix)
        self.fix_button.hide()
        self.fix_dialog: FixDialog | None = None

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.rerun_button)
        top.addWidget(self.close_button)
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.why, 1)
        column.addWidget(self.fix_button)
        self.splitter = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(side)
        self.splitter.setSizes([175, 205])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.splitter, 1)

    def sizeHint(self) -> QSize:
        """Room for a few findings and a "why?" without scrolling, when the panel appears."""
        return QSize(600, 400)

    # ---- Public API

    def reload(self) -> None:
        """Read the selected runs' findings (in the background)."""
        ids = list(self._services.selected)
        self.rerun_button.setEnabled(bool(ids))
        self._names = {r.id: r.name for r in self._services.runs(ids)}
        self._services.load_findings(ids, self._on_loaded)

    def rerun(self) -> None:
        if self._services.selected:
            self._services.rediagnose(list(self._services.selected))

    def selected(self) -> FindingItem | None:
        index = self.table.currentIndex()
        return self.model.row(index.row()) if index.isValid() else None

    # ---- Slots

    def _on_loaded(self, found: dict[int, list[Finding]]) -> None:
        if list(found) != list(self._services.selected):
            return  # the selection moved on while these were read
        changed = self.model.set_rows(present.rows(found, self._names))
        if not changed and self.model.rowCount():
            return  # the same findings: keep the one the user is looking at
        self.table.setColumnHidden(RUN, len(found) < 2)
        count = present.summary(f for fs in found.values() for f in fs)
        self.heading.setText(f"<b>Findings</b> &nbsp;<span style='color:#616e7c'>{count}</span>"
                             if found else "<b>Findings</b>")
        self._on_current(QModelIndex())
        self._fit_list()
        if self.model.rowCount() and not self._dismissed:
            self.show()

    def _fit_list(self) -> None:
        """The list as tall as its rows (2 to 6 of them, at most 2/3); "why?" gets the rest."""
        rows = min(max(self.model.rowCount(), 2), LIST_ROWS)
        wanted = self.table.horizontalHeader().height() + rows * ROW_HEIGHT + 2 * SCROLLBAR
        total = sum(self.splitter.sizes())
        if total > 0:
            height = min(wanted, total * 2 // 3)
            self.splitter.setSizes([height, total - height])

    def _on_findings_changed(self, run_ids: list[int]) -> None:
        if set(run_ids) & set(self._services.selected):
            self.reload()

    def _on_current(self, index: QModelIndex) -> None:
        row = self.model.row(index.row()) if index.isValid() else None
        if row is None:
            self.why.setHtml(PICK_ONE if self.model.rowCount() else
                             (NOTHING_FOUND if self._services.selected else ""))
            self.fix_button.hide()
            self._services.focus(None)
            return
        self.why.setHtml(present.why_html(row))
        self.fix_button.setVisible(row.fixable)
        self._services.focus(Focus(row.key, row.finding.metric))

    def open_fix(self) -> None:
        """The smallest changes that would have fitted the selected OOM finding's run."""
        row = self.selected()
        if row is None:
            return
        self.fix_dialog = FixDialog(self._services, row.run_id, self)
        self.fix_dialog.show()

    # ---- Visibility: shown when it has news, unless the user hid it

    def showEvent(self, event: QShowEvent) -> None:
        if not event.spontaneous():
            self._dismissed = False
            QTimer.singleShot(0, self._fit_list)  # once the splitter has its height
        super().showEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:
        if not event.spontaneous() and self.window().isVisible():
            self._dismissed = True  # hidden by the user, not by the window being minimised
        super().hideEvent(event)


def _findings_table(model: FindingsModel) -> QTableView:
    table = QTableView()
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setWordWrap(False)
    table.setAlternatingRowColors(True)
    table.verticalHeader().hide()
    table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
    header = table.horizontalHeader()
    header.setHighlightSections(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setStretchLastSection(True)
    for column, width in ((TITLE, 180), (STEPS, 90), (RUN, 120), (MESSAGE, 200)):
        table.setColumnWidth(column, width)
    return table
