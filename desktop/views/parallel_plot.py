"""Parallel coordinates drawn with pyqtgraph: a vertical axis per field, a line per run, brushing.

Drag along an axis to brush a range (drag again to move it, click the axis to
clear it); the runs inside every brush are drawn in colour, the rest grey,
and :attr:`ParallelPlot.sig_brushed` hands the brushes on (the panel turns
them into the runs table's filter). All runs are one item with NaN breaks
between lines, so thousands of runs draw at once.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem

from desktop.presenters.parallel import Brush, Lines, brushed
from desktop.presenters.plot_data import colour
from desktop.views.plotting import pg

GREY = QColor(150, 160, 170, 70)
KEPT = QColor("#323f4b")  # the runs inside every brush (selected runs take their plot colour)
GRAB = 0.25  # how near an axis (in axis spacings) a drag must start to brush it
BRUSH_HALF_WIDTH = 0.07


class ParallelPlot(QObject):
    sig_brushed = Signal(list)
    """The brushes changed: a list of :class:`Brush`."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.box = _BrushBox(self)
        self.widget = pg.PlotWidget(viewBox=self.box)
        self.widget.setAcceptDrops(False)
        self.plot = self.widget.getPlotItem()
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.box.setMouseEnabled(False, False)
        self.lines: Lines | None = None
        self.brushes: dict[int, Brush] = {}
        self._selected: list[int] = []

    def draw(self, lines: Lines, selected: list[int]) -> None:
        """Show ``lines``; brushes on axes that remain are kept."""
        kept = [a.field for a in lines.axes]
        old = [a.field for a in self.lines.axes] if self.lines else []
        self.brushes = {kept.index(old[i]): Brush(kept.index(old[i]), b.low, b.high)
                        for i, b in self.brushes.items() if old[i] in kept}
        self.lines, self._selected = lines, list(selected)
        self._redraw()

    def set_brush(self, axis: int, low: float | None, high: float | None = None) -> None:
        """Brush ``axis`` from ``low`` to ``high`` (positions 0..1); None clears it."""
        if low is None or high is None:
            self.brushes.pop(axis, None)
        else:
            self.brushes[axis] = Brush(axis, min(low, high), max(low, high))
        self._redraw()
        self.sig_brushed.emit(list(self.brushes.values()))

    def clear_brushes(self) -> None:
        if self.brushes:
            self.brushes = {}
            self._redraw()
            self.sig_brushed.emit([])

    def kept(self) -> np.ndarray:
        """Which runs the brushes keep (all when there are none)."""
        return brushed(self.lines, list(self.brushes.values())) if self.lines else np.zeros(0, bool)

    # ---- Drawing

    def _redraw(self) -> None:
        self.plot.clear()
        lines = self.lines
        if lines is None or not lines.axes:
            return
        n = len(lines.axes)
        keep = self.kept()
        self._polylines(lines.positions[~keep], pg.mkPen(GREY, width=1))
        self._polylines(lines.positions[keep], pg.mkPen(KEPT if self.brushes else GREY, width=1.2))
        for i, run_id in enumerate(self._selected):
            if run_id in lines.run_ids:
                row = lines.positions[lines.run_ids.index(run_id)][None, :]
                self._polylines(row, pg.mkPen(colour(i), width=2.6))
        for i, axis in enumerate(lines.axes):
            self._axis(i, axis)
        for brush in self.brushes.values():
            self._brush(brush)
        self.box.setRange(xRange=(-0.4, n - 0.6), yRange=(-0.1, 1.12), padding=0)

    def _polylines(self, rows: np.ndarray, pen) -> None:
        if not len(rows):
            return
        n = rows.shape[1]
        x = np.tile(np.append(np.arange(n, dtype=float), np.nan), len(rows))
        y = np.hstack([rows, np.full((len(rows), 1), np.nan)]).ravel()
        self.plot.addItem(pg.PlotDataItem(x, y, pen=pen, connect="finite"))

    def _axis(self, i: int, axis) -> None:
        self.plot.addItem(pg.PlotDataItem([i, i], [0, 1], pen=pg.mkPen("#323f4b", width=1.2)))
        self._text(axis.field, i, 1.1, bold=True)
        if axis.kind == "text":
            for name in axis.categories:
                self._text(name, i, axis.position(name), anchor=(0, 0.5))
        else:
            self._text(axis.tick(1.0), i, 1.035, anchor=(0, 0.5))
            self._text(axis.tick(0.0), i, -0.035, anchor=(0, 0.5))

    def _text(self, text: str, x: float, y: float, anchor=(0.5, 0.5), bold: bool = False) -> None:
        html = f"<b>{text}</b>" if bold else text
        item = pg.TextItem(html=f"<span style='color:#323f4b; font-size:8pt'>{html}</span>",
                           anchor=anchor)
        item.setPos(x + (0.03 if anchor[0] == 0 else 0), y)
        self.plot.addItem(item)

    def _brush(self, brush: Brush) -> None:
        rect = QGraphicsRectItem(QRectF(brush.axis - BRUSH_HALF_WIDTH, brush.low,
                                        2 * BRUSH_HALF_WIDTH, brush.high - brush.low))
        rect.setBrush(QBrush(QColor(78, 121, 167, 60)))
        rect.setPen(QPen(KEPT, 0))
        self.plot.addItem(rect)

    # ---- Mouse (from the view box)

    def axis_near(self, x: float) -> int | None:
        if self.lines is None:
            return None
        i = int(round(x))
        return i if 0 <= i < len(self.lines.axes) and abs(x - i) <= GRAB else None


class _BrushBox(pg.ViewBox):
    """A view box whose drags brush axes instead of panning."""

    def __init__(self, owner: ParallelPlot) -> None:
        super().__init__(enableMenu=False)
        self._owner = owner

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: N802 (pyqtgraph's name)
        if ev.button() != Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        start, now = self.mapSceneToView(ev.buttonDownScenePos()), self.mapSceneToView(ev.scenePos())
        index = self._owner.axis_near(start.x())
        if index is not None:
            self._owner.set_brush(index, _clip(start.y()), _clip(now.y()))

    def mouseClickEvent(self, ev) -> None:  # noqa: N802
        if ev.button() == Qt.MouseButton.LeftButton:
            index = self._owner.axis_near(self.mapSceneToView(ev.scenePos()).x())
            if index is not None:
                ev.accept()
                self._owner.set_brush(index, None)
                return
        ev.ignore()


def _clip(y: float) -> float:
    return min(1.0, max(0.0, y))
