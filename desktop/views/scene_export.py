"""Saving a plot scene as PNG or SVG by rendering it with Qt's own painters.

pyqtgraph 0.14's SVG exporter rewrites Qt's path data by hand and fails on the
path syntax Qt 6 writes (pyqtgraph issue #3485); ``QSvgGenerator`` renders the
same scene as true vectors without that step, and a ``QImage`` at twice the
screen size gives a crisp PNG.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QGraphicsItem, QWidget


def save(item: QGraphicsItem, path: Path, scale: float = 2.0) -> None:
    """Render ``item`` (and what is drawn over it) to ``path``: .svg as vectors, else an image."""
    source = item.sceneBoundingRect()
    if path.suffix.lower() == ".svg":
        _save_svg(item, path, source)
        return
    image = QImage(int(source.width() * scale), int(source.height() * scale),
                   QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.white)
    _render(item, image, source, QRectF(image.rect()))
    if not image.save(str(path)):
        raise OSError(f"could not write {path}")


def _save_svg(item: QGraphicsItem, path: Path, source: QRectF) -> None:
    from PySide6.QtSvg import QSvgGenerator

    svg = QSvgGenerator()
    svg.setFileName(str(path))
    svg.setSize(source.size().toSize())
    svg.setViewBox(QRectF(0, 0, source.width(), source.height()))
    svg.setTitle("Headroom plots")
    _render(item, svg, source, QRectF(0, 0, source.width(), source.height()))


def _render(item: QGraphicsItem, device, source: QRectF, target: QRectF) -> None:
    painter = QPainter(device)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    try:
        item.scene().render(painter, target, source)
    finally:
        painter.end()


def widget_png(widget: QWidget) -> bytes:
    """A widget as it looks on screen, as PNG bytes (a report's chart)."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    widget.grab().save(buffer, "PNG")
    return bytes(data.data())
