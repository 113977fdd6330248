"""Saving a plot scene as PNG or SVG by rendering it with Qt's own painters.

pyqtgraph 0.14's SVG exporter rewrites Qt's path data by hand and fails on the
path syntax Qt 6 writes (pyqtgraph issue #3485); ``QSvgGenerator`` renders the
same scene as true vectors without that step, and a ``QImage`` at twice the
screen size gives a crisp PNG.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRectF, Qt
from PySide6.QtGui import QImage, QPainter, QRegion
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


def save_widget(widget: QWidget, path: Path, above: list[QWidget] = (), scale: float = 2.0) -> None:
    """Render ``widget`` (a grid of plots) whole, with the widgets ``above`` it (its legend)
    stacked on top: .svg as vectors, else an image at ``scale`` times the screen's size."""
    parts = [(w, w.height()) for w in above if w.isVisible()]
    parts.append((widget, widget.childrenRect().bottom() + 1))  # not the empty room below
    width = max(w.width() for w, _height in parts)
    height = sum(h for _w, h in parts)
    if path.suffix.lower() == ".svg":
        from PySide6.QtSvg import QSvgGenerator

        device = QSvgGenerator()
        device.setFileName(str(path))
        device.setSize(QRectF(0, 0, width, height).size().toSize())
        device.setViewBox(QRectF(0, 0, width, height))
        device.setTitle("Headroom plots")
        _stack(device, parts, 1.0)
        return
    image = QImage(int(width * scale), int(height * scale), QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.white)
    _stack(image, parts, scale)
    if not image.save(str(path)):
        raise OSError(f"could not write {path}")


def _stack(device, parts: list[tuple[QWidget, int]], scale: float) -> None:
    painter = QPainter(device)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.scale(scale, scale)
    try:
        top = 0
        for part, height in parts:
            part.render(painter, QPoint(0, top), QRegion(0, 0, part.width(), height))
            top += height
    finally:
        painter.end()


def widget_png(widget: QWidget) -> bytes:
    """A widget as it looks on screen, as PNG bytes (a report's chart)."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    widget.grab().save(buffer, "PNG")
    return bytes(data.data())
