"""Predicted against recorded peak for every run the fit uses: the calibration at a glance.

Coloured points are held-out predictions (the fit of every other run), one
colour per context group; grey rings are what the uncalibrated model said of
the same runs. On the diagonal a run is predicted exactly; between the dashed
lines, within the 15 % the wizard keeps free. Hovering names the run; a click
selects it in the table below.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.metrics import MARGIN
from desktop.presenters.calibration_view import Point, group_title
from desktop.presenters.plot_data import colour
from desktop.views.plotting import pg

BAND = MARGIN  # the wizard's margin, drawn around the diagonal
OUTLIER_PEN = pg.mkPen("#b3261e", width=2.2)


class CalibrationPlot(QWidget):
    sig_run_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot_widget = pg.PlotWidget()
        p = self.plot_widget.getPlotItem()
        p.setMenuEnabled(False)
        p.hideButtons()
        p.showGrid(x=True, y=True, alpha=0.15)
        p.setLabel("bottom", "recorded peak, GiB")
        p.setLabel("left", "predicted, GiB")
        self.legend = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.legend)
        self.points: list[Point] = []
        self.scatters: dict[str, pg.ScatterPlotItem] = {}

    def show_points(self, points: list[Point]) -> None:
        p = self.plot_widget.getPlotItem()
        p.clear()
        self.points, self.scatters = points, {}
        top = max([q.recorded_gib or q.oom_gib or 0 for q in points]
                  + [q.predicted_gib for q in points] + [1.0]) * 1.08
        self._guides(top)
        self._analytical(points)
        groups = list(dict.fromkeys(q.group for q in points))
        for i, group in enumerate(groups):
            self._group(group, [q for q in points if q.group == group], colour(i))
        p.setXRange(0, top, padding=0)
        p.setYRange(0, top, padding=0)
        self.legend.setText(_legend(groups))

    def spots(self, group: str) -> list[tuple[float, float, str]]:
        """(recorded or OOM card, predicted, run name) of a group's points, as drawn."""
        item = self.scatters[group]
        return [(s.pos().x(), s.pos().y(), self.points[s.data()].name) for s in item.points()]

    def _guides(self, top: float) -> None:
        p = self.plot_widget.getPlotItem()
        line = np.array([0.0, top])
        p.addItem(pg.PlotDataItem(line, line, pen=pg.mkPen("#52606d", width=1)))
        dashed = pg.mkPen("#9aa5b1", width=1, style=Qt.PenStyle.DashLine)
        for factor in (1 - BAND, 1 + BAND):
            p.addItem(pg.PlotDataItem(line, line * factor, pen=dashed))

    def _analytical(self, points: list[Point]) -> None:
        measured = [(i, q) for i, q in enumerate(points) if q.recorded_gib]
        item = pg.ScatterPlotItem(
            [q.recorded_gib for _, q in measured], [q.analytical_gib for _, q in measured],
            data=[i for i, _ in measured], symbol="o", size=8, brush=None,
            pen=pg.mkPen("#9aa5b1", width=1.2), hoverable=True, tip=self._tip("uncalibrated"))
        self.plot_widget.getPlotItem().addItem(item)

    def _group(self, group: str, members: list[Point], brush: str) -> None:
        index = {id(q): i for i, q in enumerate(self.points)}
        item = pg.ScatterPlotItem(
            [q.recorded_gib or q.oom_gib for q in members], [q.predicted_gib for q in members],
            data=[index[id(q)] for q in members], size=10, brush=brush,
            symbol=["t2" if q.oom_gib else "o" for q in members],
            pen=[OUTLIER_PEN if q.outlier else pg.mkPen("w", width=0.8) for q in members],
            hoverable=True, tip=self._tip("held out"))
        item.sigClicked.connect(self._clicked)
        self.plot_widget.getPlotItem().addItem(item)
        self.scatters[group] = item

    def _tip(self, what: str):
        def tip(x: float, y: float, data: int) -> str:
            q = self.points[data]
            seen = (f"recorded {q.recorded_gib:.1f} GiB ({q.counter})" if q.recorded_gib
                    else f"OOM on a {q.oom_gib:.1f} GiB card")
            lines = [q.name, seen, f"predicted {y:.1f} GiB ({what})", group_title(q.group)]
            return "\n".join(line for line in lines + [q.status] if line)

        return tip

    def _clicked(self, _item, spots, _event=None) -> None:
        if len(spots):
            self.sig_run_clicked.emit(self.points[spots[0].data()].run_id)


def _legend(groups: list[str]) -> str:
    items = [f"<span style='color:{colour(i)}'>●</span>&nbsp;{group_title(g)}"
             for i, g in enumerate(groups)]
    items.append("<span style='color:#9aa5b1'>○</span>&nbsp;uncalibrated model")
    items.append("<span style='color:#b3261e'>◯</span>&nbsp;outlier")
    items.append("━ exact &nbsp;┅ ±15 %")
    return "&nbsp;&nbsp; ".join(items)
