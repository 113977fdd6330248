"""Per-stage charts: memory per GPU against the card (with the margin kept free), and when
each stage runs, coloured by card class: the staged purchase plan at a glance."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.planner import MARGIN
from core.project_plan import VariantPlan
from desktop.presenters.project_view import card_colours, chart_stages
from desktop.views.scene_export import widget_png

MARGIN_BRUSH = (242, 142, 43, 45)
BAR = 0.6


class ProjectChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground("w")
        self.memory = self.view.addPlot(row=0, col=0, title="GiB per GPU against the card")
        self.timeline = self.view.addPlot(row=0, col=1, title="When each stage runs")
        self.view.ci.layout.setColumnStretchFactor(1, 2)
        self.legend = QLabel(textFormat=Qt.TextFormat.RichText)
        for plot in (self.memory, self.timeline):
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.setMouseEnabled(x=False, y=False)
            plot.showGrid(x=True, alpha=0.15)
            plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.timeline.getAxis("left").setStyle(showValues=False)
        self.timeline.setYLink(self.memory)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.legend)

    def show_variants(self, variants: list[VariantPlan]) -> None:
        """One row per planned stage, in order; both charts share the rows."""
        stages = chart_stages(variants)
        self.memory.clear()
        self.timeline.clear()
        self.legend.clear()
        if not stages:
            return
        y = -np.arange(len(stages), dtype=float)
        colours = card_colours(stages)
        self._memory(stages, y, colours)
        self._timeline(stages, y, colours)
        self.memory.getAxis("left").setTicks([[(float(v), _short(s.label)) for v, s in
                                               zip(y, stages, strict=True)]])
        self.memory.setYRange(float(y.min()) - 0.6, 0.6, padding=0)

    def _memory(self, stages, y: np.ndarray, colours: dict[str, str]) -> None:
        capacity = np.array([s.capacity_gib for s in stages])
        self.memory.addItem(pg.BarGraphItem(x0=capacity * (1 - MARGIN), y=y,
                                            width=capacity * MARGIN, height=0.9,
                                            brush=MARGIN_BRUSH, pen=None))
        self.memory.addItem(pg.BarGraphItem(x0=0, y=y, width=[s.gib for s in stages],
                                            height=BAR, brushes=[colours[s.card] for s in stages],
                                            pen=pg.mkPen("w")))
        edges = np.column_stack([y - 0.45, y + 0.45]).ravel()
        self.memory.addItem(pg.PlotDataItem(np.repeat(capacity, 2), edges, connect="pairs",
                                            pen=pg.mkPen("#1f2933", width=2)))
        self.memory.setLabel("bottom", "GiB (the band: the 15 % kept free)")
        self.memory.setXRange(0, float(capacity.max()) * 1.05, padding=0)

    def _timeline(self, stages, y: np.ndarray, colours: dict[str, str]) -> None:
        end = max(s.end_days for s in stages)
        unit, scale = ("days", 1.0) if end >= 2 else ("hours", 24.0)
        for card, colour in colours.items():
            rows = [i for i, s in enumerate(stages) if s.card == card]
            item = pg.BarGraphItem(
                x0=[stages[i].start_days * scale for i in rows], y=y[rows], height=BAR,
                width=[max(stages[i].end_days - stages[i].start_days, 1e-4) * scale
                       for i in rows], brush=colour, pen=pg.mkPen("w"))
            self.timeline.addItem(item)
        self.legend.setText("&nbsp;&nbsp;".join(
            f"<span style='color:{colour}'>■</span> {card}" for card, colour in colours.items()))
        self.timeline.setLabel("bottom", f"{unit} from the start")
        self.timeline.setXRange(0, end * scale * 1.05, padding=0)

    def png(self) -> bytes:
        """The charts as a PNG (for the exported report)."""
        return widget_png(self)


def _short(label: str, width: int = 26) -> str:
    return label if len(label) <= width else label[:width - 1] + "…"
