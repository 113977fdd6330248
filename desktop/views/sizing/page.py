"""What every wizard page shares: the draft it edits, an inline message that blocks Next, labels."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
    QWizardPage,
)

from desktop.presenters.sizing_form import Draft

FIELD_WIDTH = 300  # a form's fields stay this wide; what is left goes to the hints
PANEL_STYLE = "QFrame#hints { background: #f5f7fa; border: 1px solid #d9e2ec; border-radius: 4px; }"
PROBLEM_STYLE = ("color: #a61b1b; background: #fdecea; border: 1px solid #f5c2c0; "
                 "border-radius: 3px; padding: 5px 8px;")
HINT_STYLE = "color: #52606d;"


class DraftPage(QWizardPage):
    """A page over the shared :class:`Draft`; Next waits for an empty :meth:`problem_text`."""

    def __init__(self, draft: Draft, title: str, subtitle: str) -> None:
        super().__init__()
        self.draft = draft
        self.setTitle(title)
        self.setSubTitle(subtitle)
        self.problem = QLabel(wordWrap=True, objectName="problem")
        self.problem.setStyleSheet(PROBLEM_STYLE)
        self.problem.hide()

    def scrolling_body(self) -> QWidget:
        """A widget for the page's content that scrolls when the window is short."""
        body = QWidget()
        area = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        area.setWidget(body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(area)
        return body

    def problem_text(self) -> str:
        return ""

    def busy(self) -> bool:
        """Work in the background that the page waits for (Next stays off, no message)."""
        return False

    def isComplete(self) -> bool:
        return not self.busy() and not self.problem_text()

    def refresh(self) -> None:
        """Show what is wrong (if anything) and let the wizard re-check Next."""
        text = "" if self.busy() else self.problem_text()
        self.problem.setText(text)
        self.problem.setVisible(bool(text))
        self.completeChanged.emit()


def hint_label(text: str = "") -> QLabel:
    label = QLabel(text, wordWrap=True)
    label.setStyleSheet(HINT_STYLE)
    return label


def hints_panel(*widgets: QWidget) -> QFrame:
    """The light panel beside a form that holds its rules of thumb."""
    panel = QFrame(objectName="hints")
    panel.setStyleSheet(PANEL_STYLE)
    layout = QVBoxLayout(panel)
    for widget in widgets:
        layout.addWidget(widget)
    layout.addStretch(1)
    return panel


class FittedLabel(QLabel):
    """Wrapped text that keeps the height its lines need at its width, and no more.

    A wizard page does not grow for a label's wrapped lines, so the label asks
    for them itself whenever its text or width changes.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(wordWrap=True, **kwargs)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.fit()

    def fit(self) -> None:
        if self.width() > 0:
            room = QRect(0, 0, self.width(), 1 << 16)
            lines = self.fontMetrics().boundingRect(room, Qt.TextFlag.TextWordWrap, self.text())
            self.setFixedHeight(lines.height() if self.text() else 0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()
