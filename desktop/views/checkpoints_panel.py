"""The checkpoints panel: the selected run's checkpoints, which is best, where to resume.

The table shows what each checkpoint holds (an icon per part), its status and
the run's metrics at its step, with best / latest / resume badges; the metric
and mode that decide "best" are chosen above it (the app asks when a metric's
name does not say which way is better). Below it, the recommended resume point
with its reasons and warnings, and its command to copy. "Rescan" looks at the
disk again in the background; "Plan retention…" proposes what could go.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.checkpoints import PARTS
from core.resume import command
from desktop.models.checkpoint_model import COLUMN_INDEX, CheckpointModel
from desktop.presenters import checkpoint_rows as present
from desktop.presenters.checkpoint_rows import CheckpointItem
from desktop.services import AppServices
from desktop.views import retention_dialog
from desktop.widgets.badges import BadgeDelegate, CenteredIconDelegate

SELECT_RUN = "Select a run to see its checkpoints."
NONE_FOUND = (
    "No checkpoints found for this run.\n\nHeadroom looks beside the run's logs for HF Trainer "
    "checkpoint-N folders, Lightning .ckpt files, torch.save files, DeepSpeed global_stepN, "
    "torchtitan / DCP step-N and Megatron iter_N folders, and lists those its logs name. "
    "Rescan after moving checkpoints there.")
WARNING_STYLE = "color: #8d6e00;"
MUTED_STYLE = "color: #616e7c;"
WIDTHS = {"step": 50, "badges": 100, "status": 80, "loss": 58, "metric": 70, "size": 70,
          "written": 92, **dict.fromkeys(PARTS, 41)}

if TYPE_CHECKING:
    from desktop.services import Report


class CheckpointsPanel(QWidget):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self.run_id: int | None = None
        self.report: Report | None = None
        self._rescanning = False
        self.model = CheckpointModel(self)
        self._make_widgets()
        self._layout()
        services.sig_selection_changed.connect(self._on_selection)
        services.sig_checkpoints_changed.connect(self._on_changed)
        services.sig_runs_changed.connect(self._retitle)  # a rename shows at once

    # ---- Building

    def _make_widgets(self) -> None:
        self.title = QLabel()
        self.metric_combo = QComboBox(minimumContentsLength=12)
        self.metric_combo.activated.connect(self._on_ranking)
        self.mode_combo = QComboBox()
        for text, mode in (("auto", None), ("lower is better", "min"),
                           ("higher is better", "max")):
            self.mode_combo.addItem(text, mode)
        self.mode_combo.activated.connect(self._on_ranking)
        self.resume_button = QPushButton("Resume from here", enabled=False,
                                         toolTip="Copy the resume command of the selected "
                                                 "checkpoint")
        self.resume_button.clicked.connect(self.resume_selected)
        self.rescan_button = QPushButton("Rescan", toolTip="Look at the run's folder again")
        self.rescan_button.clicked.connect(self.rescan)
        self.retention_button = QPushButton("Plan retention…",
                                            toolTip="Keep the best and the latest; see what "
                                                    "the others would free")
        self.retention_button.clicked.connect(self.plan_retention)
        self.ask = _AskMode(self._set_mode)
        self.ranking = QLabel(wordWrap=True, minimumWidth=80)
        self.ranking.setStyleSheet(MUTED_STYLE)
        self.table = self._make_table()
        self.resume = _ResumeBox(self._copy_recommended, self._reload)
        self.lineage = QLabel(wordWrap=True)
        self.lineage.setStyleSheet(MUTED_STYLE)
        self.message = QLabel(SELECT_RUN, alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.message.setStyleSheet("color: #616e7c; font-size: 13px;")

    def _make_table(self) -> QTableView:
        table = QTableView(self)
        table.setModel(self.model)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setAlternatingRowColors(True)
        table.setWordWrap(False)
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(24)
        table.setItemDelegateForColumn(COLUMN_INDEX["badges"], BadgeDelegate(table))
        icons = CenteredIconDelegate(table)
        for part in PARTS:
            table.setItemDelegateForColumn(COLUMN_INDEX[part], icons)
        header = table.horizontalHeader()
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for key, width in WIDTHS.items():
            table.setColumnWidth(COLUMN_INDEX[key], width)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._context_menu)
        table.doubleClicked.connect(lambda index: self.resume_from(index.row()))
        table.selectionModel().currentRowChanged.connect(self._on_current)
        return table

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.resume_button)
        bar.addWidget(self.rescan_button)
        bar.addWidget(self.retention_button)
        rank = QHBoxLayout()
        rank.addWidget(QLabel("Best by"))
        rank.addWidget(self.metric_combo)
        rank.addWidget(self.mode_combo)
        rank.addWidget(self.ranking, 1)
        page = QWidget()
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(rank)
        column.addWidget(self.ask)
        column.addWidget(self.table, 1)
        column.addWidget(self.resume)
        column.addWidget(self.lineage)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)

    # ---- Public API

    def load(self, run_id: int | None) -> None:
        """Show ``run_id``'s checkpoints as last scanned (None: no run)."""
        self.run_id = run_id
        self._enable(False)
        if run_id is None:
            self.report = None
            self.title.setText("")
            self._show_message(SELECT_RUN)
            return
        self._reload()

    def rescan(self) -> None:
        """Look at the run's folder again, in the background; the table follows when done."""
        if self.run_id is None:
            return
        self._rescanning = True
        self.rescan_button.setEnabled(False)
        self.rescan_button.setText("Rescanning…")
        worker = self._services.rescan_checkpoints(self.run_id)
        worker.signals.finished.connect(self._rescanned)

    def resume_from(self, row: int) -> None:
        """Copy the resume command of the checkpoint in ``row`` (warning about what it lacks)."""
        found = self.model.row(row)
        if not present.resumable(found.checkpoint):
            self._services.sig_message.emit(f"{found.name}: {present.not_resumable(found)}")
            return
        warnings = found.checkpoint.resume_warnings()
        self._copy(command(found.checkpoint),
                   f"{found.name}" + (f" — warning: {'; '.join(warnings)}" if warnings else ""))

    def resume_selected(self) -> None:
        index = self.table.currentIndex()
        if index.isValid():
            self.resume_from(index.row())

    def plan_retention(self) -> None:
        if self.run_id is not None and self.report is not None:
            retention_dialog.RetentionDialog(self._services, self.run_id, self.report,
                                             self).exec()

    def selected(self) -> CheckpointItem | None:
        index = self.table.currentIndex()
        return self.model.row(index.row()) if index.isValid() else None

    # ---- Loading

    def _on_selection(self, run_ids: list[int]) -> None:
        first = run_ids[0] if run_ids else None
        if first != self.run_id:
            self.load(first)

    def _on_changed(self, run_id: int) -> None:
        if run_id == self.run_id:
            self._reload()

    def _reload(self) -> None:
        if self.run_id is not None:
            self._services.load_checkpoints(self.run_id, self._show,
                                            from_best=self.resume.from_best.isChecked())

    def _show(self, report: Report) -> None:
        if report.run_id != self.run_id:
            return  # another run was selected while this one loaded
        self.report = report
        names = {r.id: r.name for r in self._services.runs([report.run_id, *_related(report)])}
        self._set_title(names.get(report.run_id, ""))
        self._fill_ranking(report)
        self.model.set_rows(present.rows(report), present.eval_column(report.choice.metric))
        self._fit_badges()
        self._on_current()
        self.resume.show_resume(report.resume, report.checkpoints)
        self.lineage.setText(present.lineage_text(report.origin, names))
        self.lineage.setVisible(bool(self.lineage.text()))
        self._enable(bool(report.checkpoints))
        if report.checkpoints:
            self.stack.setCurrentIndex(1)
        else:
            self._show_message(NONE_FOUND)

    def _set_title(self, name: str) -> None:
        count = len(self.report.checkpoints) if self.report else 0
        self.title.setText(f"<b>{html.escape(name)}</b> &nbsp; <span style='{MUTED_STYLE}'>"
                           f"{count} checkpoint{'s' * (count != 1)}</span>")

    def _retitle(self) -> None:
        """The run's name as it is now (after a rename), without reloading its checkpoints."""
        if self.report is not None and self.report.run_id == self.run_id:
            found = self._services.runs([self.run_id])
            if found:
                self._set_title(found[0].name)

    def _fit_badges(self) -> None:
        """Widen the badges column to its widest row, so no pill is cut."""
        column = COLUMN_INDEX["badges"]
        needed = self.table.sizeHintForColumn(column)
        self.table.setColumnWidth(column, max(WIDTHS["badges"], needed))

    def _fill_ranking(self, report: Report) -> None:
        metric, mode = self._services.ranking(report.run_id)
        choice = report.choice
        self.metric_combo.clear()
        self.metric_combo.addItem(f"auto: {choice.metric}" if choice.metric and not metric
                                  else "auto", None)
        for name in present.metric_choices(report.checkpoints):
            self.metric_combo.addItem(name, name)
        self.metric_combo.setCurrentIndex(max(self.metric_combo.findData(metric), 0))
        self.mode_combo.setItemText(0, f"auto: {present.MODES[choice.mode]}"
                                    if choice.mode and not mode else "auto")
        self.mode_combo.setCurrentIndex(max(self.mode_combo.findData(mode), 0))
        self.ranking.setText(present.ranking_note(report) if (metric, mode) == (None, None)
                             else "")
        self.ask.ask(choice.metric if present.must_ask_mode(report) else None)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.stack.setCurrentIndex(0)

    def _enable(self, on: bool) -> None:
        for widget in (self.metric_combo, self.mode_combo, self.retention_button):
            widget.setEnabled(on)
        self.rescan_button.setEnabled(self.run_id is not None and not self._rescanning)

    def _on_current(self) -> None:
        row = self.selected()
        self.resume_button.setEnabled(row is not None and present.resumable(row.checkpoint))

    def _rescanned(self) -> None:
        self._rescanning = False
        self.rescan_button.setText("Rescan")
        self.rescan_button.setEnabled(self.run_id is not None)

    # ---- Ranking and copying

    def _on_ranking(self) -> None:
        if self.run_id is not None:
            self._services.set_ranking(self.run_id, self.metric_combo.currentData(),
                                       self.mode_combo.currentData())

    def _set_mode(self, mode: str) -> None:
        if self.run_id is not None and self.report is not None:
            self._services.set_ranking(self.run_id, self.report.choice.metric, mode)

    def _copy_recommended(self) -> None:
        if self.report is not None and self.resume.current is not None:
            resume = self.resume.current
            self._copy(resume.command, present.resume_title(resume).removeprefix("Resume from "))

    def _copy(self, text: str, what: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self._services.sig_message.emit(f"Copied the resume command for {what}")

    def _context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        row = self.model.row(index.row())
        menu = QMenu(self)
        resume = menu.addAction("Resume from here (copy the command)",
                                lambda: self.resume_from(index.row()))
        resume.setEnabled(present.resumable(row.checkpoint))
        menu.addAction("Copy path", lambda: QGuiApplication.clipboard().setText(
            row.checkpoint.path))
        menu.exec(self.table.viewport().mapToGlobal(pos))


def _related(report: Report) -> list[int]:
    origin = report.origin
    if origin is None:
        return []
    return [i for i in (origin.parent_run, *origin.children) if i is not None]


class _AskMode(QFrame):
    """Asks whether a higher or a lower value is better, when a metric's name does not say."""

    def __init__(self, answer) -> None:
        super().__init__()
        self.setStyleSheet("_AskMode { background: #fff8e1; border: 1px solid #f0d58c; "
                           "border-radius: 4px; }")
        self.question = QLabel()
        lower = QPushButton("Lower is better")
        lower.clicked.connect(lambda: answer("min"))
        higher = QPushButton("Higher is better")
        higher.clicked.connect(lambda: answer("max"))
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 8, 4)
        row.addWidget(self.question, 1)
        row.addWidget(lower)
        row.addWidget(higher)
        self.hide()

    def ask(self, metric: str | None) -> None:
        """Show the question for ``metric`` (None: hide it)."""
        if metric:
            self.question.setText(f"Is a higher or a lower <b>{metric}</b> better? "
                                  "The best checkpoint depends on it.")
        self.setVisible(bool(metric))


class _ResumeBox(QFrame):
    """The recommended resume point: why, what it will get wrong, and its command to copy."""

    def __init__(self, copy, reload) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.current = None
        self.heading = QLabel()
        self.reasons = QLabel(wordWrap=True)
        self.warnings = QLabel(wordWrap=True)
        self.warnings.setStyleSheet(WARNING_STYLE)
        self.command = QLineEdit(readOnly=True)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.command.setFont(mono)
        self.copy_button = QPushButton("Copy command")
        self.copy_button.clicked.connect(copy)
        self.from_best = QCheckBox("I am restarting from the best checkpoint")
        self.from_best.setToolTip("Recommend the best checkpoint, not the latest complete one")
        self.from_best.toggled.connect(reload)
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.from_best)
        line = QHBoxLayout()
        line.addWidget(self.command, 1)
        line.addWidget(self.copy_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 6, 8, 6)
        column.addLayout(top)
        column.addWidget(self.reasons)
        column.addWidget(self.warnings)
        column.addLayout(line)

    def show_resume(self, resume, checkpoints=()) -> None:
        self.current = resume
        self.heading.setText(f"<b>{present.resume_title(resume, list(checkpoints))}</b>")
        self.reasons.setText("Why: " + "; ".join(resume.reasons) if resume else "")
        self.reasons.setVisible(bool(resume and resume.reasons))
        self.warnings.setText("\n".join(f"⚠ {w}" for w in resume.warnings) if resume else "")
        self.warnings.setVisible(bool(resume and resume.warnings))
        self.command.setText(resume.command if resume else "")
        self.command.setCursorPosition(0)
        self.command.setVisible(resume is not None)
        self.copy_button.setVisible(resume is not None)

