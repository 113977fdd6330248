"""The first thing a new user sees: where to drop logs, and buttons for the other ways in."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStyle,
    QVBoxLayout,
    QWidget,
)

MESSAGE_WHEN_EMPTY = "Drop training logs or run folders here"
DESCRIPTION_WHEN_EMPTY = (
    "HF Trainer output folders, Lightning, TensorBoard, W&amp;B and MLflow runs, console logs "
    "of Megatron-LM, DeepSpeed, torchtitan and nanoGPT, JSONL and CSV: {count} formats in all.<br>"
    "Everything goes into a local database; your files are only read, never changed."
)


def _centred(widget: QWidget) -> QHBoxLayout:
    """A row that centres ``widget`` and lets it grow up to its maximum width."""
    row = QHBoxLayout()
    row.addStretch(1)
    row.addWidget(widget, 10)
    row.addStretch(1)
    return row


class EmptyState(QWidget):
    """A framed drop target with Open files, Open folder and Load sample runs buttons."""

    sig_open_files_requested = Signal()
    sig_open_folder_requested = Signal()
    sig_samples_requested = Signal()

    def __init__(self, formats: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        frame = QFrame(objectName="dropFrame")
        frame.setStyleSheet(
            "#dropFrame { border: 2px dashed #9aa5b1; border-radius: 12px; background: #f7f9fb; }"
        )
        title = QLabel(MESSAGE_WHEN_EMPTY, alignment=Qt.AlignmentFlag.AlignCenter)
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        title.setFont(font)
        text = QLabel(DESCRIPTION_WHEN_EMPTY.format(count=len(formats)), wordWrap=True,
                      alignment=Qt.AlignmentFlag.AlignCenter)
        text.setMaximumWidth(620)  # a readable measure on wide windows
        text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        text.setToolTip("\n".join(formats))
        icon = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_DirOpenIcon).pixmap(56))
        text.setStyleSheet("color: #52606d;")
        inner = QVBoxLayout(frame)
        inner.setContentsMargins(48, 40, 48, 40)
        inner.setSpacing(16)
        inner.addStretch(1)
        inner.addWidget(icon)
        inner.addWidget(title)
        inner.addLayout(_centred(text))
        inner.addLayout(self._buttons())
        inner.addStretch(1)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(40, 40, 40, 40)
        outer.addWidget(frame)

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addStretch(1)
        for text, signal in (
            ("Open files…", self.sig_open_files_requested),
            ("Open folder…", self.sig_open_folder_requested),
            ("Load sample runs", self.sig_samples_requested),
        ):
            button = QPushButton(text, minimumHeight=32, minimumWidth=130)
            button.clicked.connect(signal)
            row.addWidget(button)
        button.setDefault(True)  # a newcomer's quickest way to see every view
        row.addStretch(1)
        return row
