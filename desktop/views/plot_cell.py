"""One cell of the plots grid: a metric's plot, its hover readout, and a grip to resize it.

The readout is a dark box that follows the cursor with every shown run's value
at that x (highest first), placed beside the cursor where it fits. Dragging the
grip under the plot sets the panel's height, which the app remembers per metric.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import QPoint, QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from desktop.presenters import plot_readout
from desktop.views.metric_plot import CompactAxis, DateGridAxis, GridAxis, MetricPlot
from desktop.views.plot_viewbox import PanelViewBox
from desktop.views.plotting import pg

MIN_HEIGHT = 120
GRIP_HEIGHT = 7
READOUT_STYLE = ("QLabel { background: rgba(31, 41, 51, 235); color: #f5f7fa; "
                 "border-radius: 4px; padding: 5px 7px; font-size: 11px; }")
CURSOR_GAP = 14  # pixels between the cursor and the readout
NEAR = 0.01  # a sparse overlay's point is read out within this share of the view's width


class PlotCell(QWidget):
    """A metric's panel in the grid."""

    sig_height_changed = Signal(str, int)
    """The user dragged the panel to this height (metric, pixels)."""

    def __init__(self, metric: str, height: int, on_menu: Callable[[PlotCell, QPointF], None],
                 wall_axis: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.metric_name = metric  # not "metric": that would hide QWidget.metric(), which Qt calls
        box = PanelViewBox(self.reset, lambda pos: on_menu(self, pos), self._user_y)
        axes = {"left": CompactAxis("left"),
                "bottom": DateGridAxis() if wall_axis else GridAxis("bottom")}
        self.view = pg.PlotWidget(viewBox=box, axisItems=axes)
        self.view.setAcceptDrops(False)  # drops go to the window, which ingests them
        self.view.setMinimumHeight(MIN_HEIGHT - GRIP_HEIGHT)
        self.plot: MetricPlot = MetricPlot(self.view.getPlotItem())
        self.readout = QLabel(self.view, textFormat=Qt.TextFormat.RichText)
        self.readout.setStyleSheet(READOUT_STYLE)
        self.readout.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.readout.hide()
        self.grip = _Grip(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.grip)
        self.setFixedHeight(max(MIN_HEIGHT, height))

    def reset(self) -> None:
        """Double-click or the menu's Reset: the whole runs, y fitted again."""
        self.plot.reset_view()

    def show_readout(self, x: float, x_label: str, at: QPointF) -> None:
        """The readout of the values at data ``x``, beside the scene position ``at``."""
        panel = self.plot.panel
        if panel is None:
            return
        low, high = (self.plot.data_x(v) for v in self.plot.plot.vb.viewRange()[0])
        found, more = plot_readout.rows(panel, x, near=NEAR * (high - low))
        lines = [f"<b>{html.escape(x_label)}</b>"]
        lines += [f"<span style='color:{r.colour}'>■</span> {html.escape(r.label)}"
                  f"&nbsp;&nbsp;<b>{html.escape(r.text)}</b>" for r in found]
        if more:
            lines.append(f"<span style='color:#9aa5b1'>and {more} more</span>")
        self.readout.setText("<br>".join(lines))
        self.readout.adjustSize()
        self.readout.move(self._beside(self.view.mapFromScene(at)))
        self.readout.show()
        self.readout.raise_()

    def hide_readout(self) -> None:
        self.readout.hide()

    def _beside(self, cursor: QPoint) -> QPoint:
        """Right of the cursor where it fits, else left; never past the plot's edges."""
        size, room = self.readout.size(), self.view.size()
        x = cursor.x() + CURSOR_GAP
        if x + size.width() > room.width():
            x = cursor.x() - CURSOR_GAP - size.width()
        y = min(max(0, cursor.y() - size.height() // 2), max(0, room.height() - size.height()))
        return QPoint(max(0, x), y)

    def _user_y(self) -> None:
        self.plot.auto_y = False

    def resize_to(self, height: int) -> None:
        self.setFixedHeight(max(MIN_HEIGHT, height))

    def resize_done(self) -> None:
        self.sig_height_changed.emit(self.metric_name, self.height())


class _Grip(QWidget):
    """The strip under a plot: drag it to make the panel taller or shorter."""

    def __init__(self, cell: PlotCell) -> None:
        super().__init__(cell)
        self._cell = cell
        self._start: tuple[float, int] | None = None
        self.setFixedHeight(GRIP_HEIGHT)
        self.setCursor(Qt.CursorShape.SizeVerCursor)
        self.setToolTip("Drag to resize this panel")
        self.setStyleSheet("_Grip:hover { background: #e4e7eb; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground)

    def mousePressEvent(self, event) -> None:
        self._start = (event.globalPosition().y(), self._cell.height())

    def mouseMoveEvent(self, event) -> None:
        if self._start is not None:
            y, height = self._start
            self._cell.resize_to(int(height + event.globalPosition().y() - y))

    def mouseReleaseEvent(self, event) -> None:
        if self._start is not None:
            self._start = None
            self._cell.resize_done()
