"""The checkpoints table: a Qt model over one run's checkpoint rows.

Columns, the most telling first: step, badges (best / latest / resume), one
completeness icon per part (model, optimizer, scheduler, RNG, scaler, trainer
state), status, training loss, the ranking metric, size, when written, and the
checkpoint's name.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from core.checkpoints import PARTS
from desktop.models.rows import RIGHT, Index, RowsModel
from desktop.presenters import checkpoint_rows as present
from desktop.presenters import formatting as fmt
from desktop.presenters.checkpoint_rows import PART_NAMES, CheckpointItem
from desktop.widgets.badges import BADGES_ROLE
from desktop.widgets.icons import part_icon

COLUMNS = ("step", "badges", *PARTS, "status", "loss", "metric", "size", "written", "name")
COLUMN_INDEX = {key: i for i, key in enumerate(COLUMNS)}
TITLES = {"step": "Step", "badges": "", "written": "Written", "size": "Size", "status": "Status",
          "loss": "Loss", "name": "Checkpoint", **{p: PART_NAMES[p][0] for p in PARTS}}
TIPS = {"badges": "best by the chosen metric, latest on disk, and the recommended resume point",
        "loss": "training loss at the step (mean of the last logged values)",
        **{p: PART_NAMES[p][1] for p in PARTS}}
NUMERIC = {"step", "size", "loss", "metric"}
_CENTER = int(Qt.AlignmentFlag.AlignCenter)
_GREY, _RED = QColor("#7b8794"), QColor("#c62828")


class CheckpointModel(RowsModel[CheckpointItem]):
    column_count = len(COLUMNS)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.metric = "eval_loss"  # the metric column's series

    def set_rows(self, rows: list[CheckpointItem], metric: str) -> None:
        self.metric = metric
        self._replace(rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, key = self._rows[index.row()], COLUMNS[index.column()]
        if key in PARTS:
            return self._part(row, key, role)
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, key)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tip(row, key)
        if role == BADGES_ROLE and key == "badges":
            return row.badges
        if role == Qt.ItemDataRole.TextAlignmentRole and key in NUMERIC:
            return RIGHT
        if role == Qt.ItemDataRole.ForegroundRole and key == "status":
            return _RED if row.checkpoint.status in ("missing", "unreadable") else (
                _GREY if row.checkpoint.status != "ok" else None)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        key = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.metric if key == "metric" else TITLES[key]
        if role == Qt.ItemDataRole.ToolTipRole:
            return TIPS.get(key, "the metric that ranks the checkpoints" if key == "metric"
                            else None)
        return None

    # ---- Cells

    def _part(self, row: CheckpointItem, part: str, role: int) -> Any:
        if role == Qt.ItemDataRole.DecorationRole and row.checkpoint.present:
            return part_icon(row.part(part))
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.part_tip(part) if row.checkpoint.present else "no files to look into"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return row.part_tip(part)
        return None

    def _text(self, row: CheckpointItem, key: str) -> str:
        c = row.checkpoint
        texts = {
            "step": lambda: fmt.count(c.step), "badges": lambda: " ".join(row.badges),
            "written": lambda: present.written(row), "size": lambda: present.size(row),
            "status": lambda: row.status, "loss": lambda: present.metric_value(row, "loss"),
            "metric": lambda: present.metric_value(row, self.metric), "name": lambda: row.name,
        }
        return texts[key]()

    def _tip(self, row: CheckpointItem, key: str) -> str | None:
        if key == "status":
            return row.status_tip or None
        if key in ("loss", "metric"):
            return present.metric_tip(row, "loss" if key == "loss" else self.metric)
        if key == "name":
            return row.checkpoint.path
        if key == "written":
            return fmt.when(row.checkpoint.written_at) or None
        return None
