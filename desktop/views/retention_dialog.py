"""Plan retention…: keep the best k and the latest n checkpoints, see what the rest would free.

The plan is the checkpoint manager's: it never proposes the best, the latest
complete checkpoint, the framework's own best or one another run resumed from.
Nothing is deleted until the user confirms a second question; then the
checkpoints go to the system trash (never deleted outright) and the dialog
reports what moved and what could not.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from PySide6.QtGui import QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.metrics import size_text
from core.retention import RetentionError, RetentionPlan
from desktop.presenters import checkpoint_rows as present
from desktop.services import AppServices

HEADERS = ("", "Step", "Checkpoint", "Size", "Why it stays")
ALWAYS_KEPT = ("Always kept, whatever the numbers: the best, the latest complete checkpoint "
               "(the resume point), the framework's own best, and any checkpoint another run "
               "resumed from.")
KEEP, DELETE = QColor("#2e7d32"), QColor("#c62828")
MAX_LISTED = 12

if TYPE_CHECKING:
    from desktop.services import Report


def confirm(parent: QWidget, plan: RetentionPlan) -> bool:
    """The explicit second question before anything moves to the trash."""
    names = [f"  • {PurePath(c.path).name} ({size_text(c.size_bytes or 0)})"
             for c in plan.delete[:MAX_LISTED]]
    if len(plan.delete) > MAX_LISTED:
        names.append(f"  … and {len(plan.delete) - MAX_LISTED} more")
    answer = QMessageBox.warning(
        parent, "Move checkpoints to the trash",
        f"Move {_count(len(plan.delete))} to the system trash, freeing "
        f"{size_text(plan.freed_bytes)}?\n\n" + "\n".join(names) +
        "\n\nYou can restore them from the trash until it is emptied.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


class RetentionDialog(QDialog):
    def __init__(self, services: AppServices, run_id: int, report: Report,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services, self.run_id = services, run_id
        self.plan: RetentionPlan | None = None
        self.setWindowTitle("Plan checkpoint retention")
        self.resize(760, 460)
        self.keep_best = QSpinBox(minimum=0, maximum=999, value=1, minimumWidth=64)
        self.keep_latest = QSpinBox(minimum=0, maximum=999, value=1, minimumWidth=64)
        self.model = QStandardItemModel(0, len(HEADERS), self)
        self.model.setHorizontalHeaderLabels(list(HEADERS))
        self.table = _table(self.model)
        self.summary = QLabel(wordWrap=True)
        self.result = QLabel(wordWrap=True)
        self.result.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.rejected.connect(self.reject)
        self.trash_button = QPushButton()
        self.buttons.addButton(self.trash_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.trash_button.clicked.connect(self.delete)
        self._layout(report)
        self.keep_best.valueChanged.connect(self.replan)
        self.keep_latest.valueChanged.connect(self.replan)
        self.replan()

    def _layout(self, report: Report) -> None:
        counts = QHBoxLayout()
        counts.addWidget(QLabel("Keep the best"))
        counts.addWidget(self.keep_best)
        counts.addWidget(QLabel(f"by {report.choice.metric or '?'}, and the latest"))
        counts.addWidget(self.keep_latest)
        counts.addStretch(1)
        ranking = QLabel(f"{present.ranking_text(report)}. {ALWAYS_KEPT}", wordWrap=True)
        ranking.setStyleSheet("color: #616e7c;")
        layout = QVBoxLayout(self)
        layout.addLayout(counts)
        layout.addWidget(ranking)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.summary)
        layout.addWidget(self.result)
        layout.addWidget(self.buttons)

    # ---- Planning and deleting

    def replan(self) -> None:
        """Ask the checkpoint manager what the chosen numbers would keep and delete."""
        try:
            self.plan = self._services.plan_retention(self.run_id, self.keep_best.value(),
                                                      self.keep_latest.value())
        except RetentionError as err:
            self.plan = None
            self._fill([], [])
            self.summary.setText(str(err)[:1].upper() + str(err)[1:] + ".")
            self.summary.setStyleSheet("color: #c62828;")
            self._enable_trash(0)
            return
        self._fill(self.plan.keep, self.plan.delete)
        self.summary.setStyleSheet("")
        if self.plan.delete:
            self.summary.setText(f"{_count(len(self.plan.delete)).capitalize()} would go, "
                                 f"freeing {size_text(self.plan.freed_bytes)}.")
        else:
            self.summary.setText("Nothing to delete: every checkpoint on disk stays.")
        self._enable_trash(len(self.plan.delete))

    def delete(self) -> None:
        """Move the planned checkpoints to the trash, after the user confirms."""
        if not self.plan or not self.plan.delete or not confirm(self, self.plan):
            return
        self.trash_button.setEnabled(False)
        self.trash_button.setText("Moving to the trash…")
        self._services.trash_checkpoints(self.run_id, self.plan, self._deleted)

    def _deleted(self, done) -> None:
        lines = [f"Moved {_count(len(done.trashed))} to the trash, freeing "
                 f"{size_text(done.freed_bytes)}."]
        lines += [f"Not moved: {PurePath(path).name}: {why}" for path, why in done.failed.items()]
        self.result.setText("\n".join(lines))
        self.result.setStyleSheet("color: #c62828;" if done.failed else "color: #2e7d32;")
        self.result.show()
        self.replan()

    # ---- Table

    def _fill(self, keep, delete) -> None:
        self.model.removeRows(0, self.model.rowCount())
        for c, why in keep:
            self.model.appendRow(_row("keep", c, "; ".join(why), KEEP))
        for c in delete:
            self.model.appendRow(_row("delete", c, "", DELETE))

    def _enable_trash(self, count: int) -> None:
        self.trash_button.setText(f"Move {count} to the trash…" if count else "Move to the trash…")
        self.trash_button.setEnabled(count > 0)


def _row(action: str, c, why: str, colour: QColor) -> list[QStandardItem]:
    step = QStandardItem("" if c.step is None else f"{c.step:,}")
    cells = [QStandardItem(action), step, QStandardItem(PurePath(c.path).name),
             QStandardItem(size_text(c.size_bytes) if c.size_bytes is not None else ""),
             QStandardItem(why)]
    cells[0].setForeground(colour)
    cells[2].setToolTip(c.path)
    cells[4].setToolTip(why or None)
    return cells


def _table(model: QStandardItemModel) -> QTableView:
    table = QTableView()
    table.setModel(model)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.verticalHeader().hide()
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setStretchLastSection(True)
    for column, width in enumerate((58, 64, 160, 80)):
        table.setColumnWidth(column, width)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    return table


def _count(n: int) -> str:
    return f"{n} checkpoint{'s' * (n != 1)}"
