"""Item delegates: rounded badges ("best", "latest", "resume") and centred status icons."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

# Badge -> (text colour, fill): best green, latest blue, resume amber.
BADGE_COLOURS = {"best": ("#1b5e20", "#dcedc8"), "latest": ("#0d47a1", "#dbe9f8"),
                 "resume": ("#6d4c00", "#ffecb3")}
BADGES_ROLE = Qt.ItemDataRole.UserRole + 1  # where a model gives a cell its badge words
PAD, GAP = 6, 4


class BadgeDelegate(QStyledItemDelegate):
    """Paints the cell's badge words (:data:`BADGES_ROLE`) as rounded pills, inside the cell.

    Its size hint is the width the pills need, so the column can be fitted to them
    (``resizeColumnToContents``); a narrower column clips them, never its neighbours.
    """

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        metrics = QFontMetrics(option.font)
        badges = index.data(BADGES_ROLE) or []
        width = GAP + sum(metrics.horizontalAdvance(w) + 2 * PAD + GAP for w in badges)
        return QSize(width, metrics.height() + 6)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        self.initStyleOption(option, index)
        option.text = ""
        style = option.widget.style() if option.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        badges = index.data(BADGES_ROLE) or []
        metrics = QFontMetrics(option.font)
        height = metrics.height() + 2
        x = option.rect.left() + GAP
        y = option.rect.top() + (option.rect.height() - height) / 2
        painter.save()
        painter.setClipRect(option.rect)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        for word in badges:
            ink, fill = BADGE_COLOURS.get(word, ("#323f4b", "#e4e7eb"))
            width = metrics.horizontalAdvance(word) + 2 * PAD
            rect = QRectF(x, y, width, height)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(fill))
            painter.drawRoundedRect(rect, height / 2, height / 2)
            painter.setPen(QColor(ink))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, word)
            x += width + GAP
        painter.restore()


class CenteredIconDelegate(QStyledItemDelegate):
    """An icon-only cell with its icon in the middle."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        super().initStyleOption(option, index)
        option.decorationAlignment = Qt.AlignmentFlag.AlignCenter
        option.decorationPosition = QStyleOptionViewItem.Position.Top
        option.displayAlignment = Qt.AlignmentFlag.AlignCenter
