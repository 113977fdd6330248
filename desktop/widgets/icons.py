"""The app's icon, and small status icons painted in code: finding severities, checkpoint parts.

The app icon is the shipped SVG (resources/icons), drawn sharp at any size.
Status icons are painted rather than taken from the style, so they look the
same on every platform and theme, stay legible at 16 px, and need no image
files. Each icon is made once (after the QApplication exists) and cached.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

from core.resources import resources_dir

SIZE = 16
SCALE = 3  # painted at 3x, so HiDPI screens get sharp edges

# Severity colours, shared with the plots' shaded ranges.
SEVERITY_COLOURS = {"critical": "#c62828", "warning": "#e0a100", "info": "#2f6fb0"}
PART_COLOURS = {True: "#2e7d32", False: "#c62828", None: "#9aa5b1"}


@cache
def app_icon() -> QIcon:
    """Headroom's icon, for the window, the taskbar and the dock."""
    return QIcon(str(resources_dir() / "icons" / "headroom.svg"))


@cache
def severity_icon(severity: str | None) -> QIcon:
    """Critical: red disc with "!"; warning: amber triangle with "!"; info: blue disc with "i"."""
    if severity not in SEVERITY_COLOURS:
        return QIcon()
    colour = QColor(SEVERITY_COLOURS[severity])
    if severity == "warning":
        return _icon(lambda p: _triangle(p, colour, "!"))
    return _icon(lambda p: _disc(p, colour, "i" if severity == "info" else "!"))


@cache
def part_icon(state: bool | None) -> QIcon:
    """A checkpoint part: present (green check), missing (red cross), unknown (grey "?")."""
    colour = QColor(PART_COLOURS[state])
    if state is None:
        return _icon(lambda p: _ring(p, colour, "?"))
    return _icon(lambda p: (_check if state else _cross)(p, colour))


def _icon(paint) -> QIcon:
    pixmap = QPixmap(SIZE * SCALE, SIZE * SCALE)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.scale(SCALE, SCALE)
    paint(painter)
    painter.end()
    pixmap.setDevicePixelRatio(SCALE)
    return QIcon(pixmap)


def _glyph(painter: QPainter, rect: QRectF, text: str, colour: QColor | str) -> None:
    font = QFont()
    font.setBold(True)
    font.setPixelSize(11)
    painter.setFont(font)
    painter.setPen(QColor(colour))
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


def _disc(painter: QPainter, colour: QColor, text: str) -> None:
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(colour)
    painter.drawEllipse(QRectF(1, 1, 14, 14))
    _glyph(painter, QRectF(1, 1, 14, 14), text, "white")


def _triangle(painter: QPainter, colour: QColor, text: str) -> None:
    painter.setPen(QPen(colour.darker(115), 1))
    painter.setBrush(colour)
    painter.drawPolygon(QPolygonF([QPointF(8, 1), QPointF(15.2, 14.5), QPointF(0.8, 14.5)]))
    _glyph(painter, QRectF(1, 4, 14, 11), text, "#1f2933")


def _ring(painter: QPainter, colour: QColor, text: str) -> None:
    painter.setPen(QPen(colour, 1.4))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawEllipse(QRectF(1.7, 1.7, 12.6, 12.6))
    _glyph(painter, QRectF(1, 1, 14, 14), text, colour)


def _check(painter: QPainter, colour: QColor) -> None:
    path = QPainterPath(QPointF(3, 8.5))
    path.lineTo(6.5, 12)
    path.lineTo(13, 4)
    _stroke(painter, path, colour)


def _cross(painter: QPainter, colour: QColor) -> None:
    path = QPainterPath(QPointF(4, 4))
    path.lineTo(12, 12)
    path.moveTo(12, 4)
    path.lineTo(4, 12)
    _stroke(painter, path, colour)


def _stroke(painter: QPainter, path: QPainterPath, colour: QColor) -> None:
    pen = QPen(colour, 2.4, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
               Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawPath(path)
