"""The summary scatter drawn with pyqtgraph: a point per run, the selected ones ringed, and the
memory model's analytical and calibrated curves (the one that leads solid, the other dashed)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal

from desktop.presenters.scatter import ModelCurves, Scatter
from desktop.views.plotting import pg

SIZE, SELECTED_SIZE = 9, 14
ANALYTICAL, CALIBRATED = "#323f4b", "#e15759"


class ScatterPlot(QObject):
    sig_clicked = Signal(int)
    """A point was clicked: its run id."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.widget = pg.PlotWidget()
        self.widget.setAcceptDrops(False)
        self.plot = self.widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setMenuEnabled(False)
        self.legend = self.plot.addLegend(offset=(10, 10), labelTextSize="8pt")
        self.points: pg.ScatterPlotItem | None = None
        self.curves: dict[str, pg.PlotDataItem] = {}

    def draw(self, found: Scatter, colours: list[str], key: dict[str, str] | None = None) -> None:
        """The points in ``colours``; ``key`` names what each colour means in the legend."""
        self.plot.clear()
        self.legend.clear()
        self.curves = {}
        self.plot.setLabel("bottom", found.x)
        self.plot.setLabel("left", found.y)
        names = {p.run_id: p.name for p in found.points}
        self.points = pg.ScatterPlotItem(
            spots=[_spot(p, c) for p, c in zip(found.points, colours, strict=True)],
            hoverable=True, hoverSize=SELECTED_SIZE,
            tip=lambda x, y, data: f"{names[data]}\n{found.x}: {x:.4g}\n{found.y}: {y:.4g}")
        self.points.sigClicked.connect(self._on_click)
        self.plot.addItem(self.points)
        for name, colour in (key or {}).items():
            sample = pg.ScatterPlotItem(size=SIZE, brush=pg.mkBrush(colour), pen=None)
            self.legend.addItem(sample, name)
        if found.model is not None:
            self._draw_model(found.model)

    def _draw_model(self, model: ModelCurves) -> None:
        lead = model.lead == "calibrated"
        self._curve("analytical", model.x, model.analytical, ANALYTICAL, not lead,
                    f"model, analytical{' (leads)' if not lead else ''}")
        if model.calibrated is not None:
            self._curve("calibrated", model.x, model.calibrated, CALIBRATED, lead,
                        f"model, calibrated{' (trusted, leads)' if lead else ' (not trusted)'}")

    def _curve(self, key: str, x: np.ndarray, y: np.ndarray, colour: str, leads: bool,
               name: str) -> None:
        style = Qt.PenStyle.SolidLine if leads else Qt.PenStyle.DashLine
        item = pg.PlotDataItem(x, y, name=name, connect="finite",
                               pen=pg.mkPen(colour, width=2.4 if leads else 1.4, style=style))
        self.plot.addItem(item)
        self.curves[key] = item

    def _on_click(self, _item, points, _event=None) -> None:
        if len(points):
            self.sig_clicked.emit(int(points[0].data()))


def _spot(point, colour: str) -> dict:
    ring = pg.mkPen("#1f2933", width=2) if point.selected else pg.mkPen("#ffffff", width=0.8)
    return {"pos": (point.x, point.y), "data": point.run_id, "brush": pg.mkBrush(colour),
            "pen": ring, "size": SELECTED_SIZE if point.selected else SIZE}
