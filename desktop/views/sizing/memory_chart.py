"""The result page's chart: stacked memory per GPU against each candidate GPU's capacity.

The items are made once and only their data changes, so a what-if slider
redraws in a few milliseconds (bench/wizard_update.py). Beside each bar, the
calibrated figure with its 90 % interval; under each capacity line, the band
the seed article says to keep free (15–20 %).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from desktop.presenters.memory_bars import COLOURS, LABELS, SEGMENTS, Bar
from desktop.views.plotting import pg

BAR_WIDTH = 0.5
SLOT = 0.86  # the width of a GPU's place: capacity line and margin band
CALIBRATED_OFFSET = 0.34  # the calibrated marker sits right of its bar
MARGIN_BRUSH = (242, 142, 43, 45)
VERDICT_COLOURS = {"fits": "#2f7d32", "tight": "#b26a00", "short": "#b3261e"}


class MemoryChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self._style_plot()
        self.bars: list[Bar] = []
        self.band = self._add(pg.BarGraphItem(x=[], height=[], width=SLOT, brush=MARGIN_BRUSH,
                                              pen=None))
        self.stack = {name: self._add(pg.BarGraphItem(x=[], height=[], width=BAR_WIDTH,
                                                      brush=COLOURS[name], pen=pg.mkPen("w")))
                      for name in SEGMENTS}
        self.capacity = self._add(pg.PlotDataItem(connect="pairs",
                                                  pen=pg.mkPen("#1f2933", width=2)))
        self.limit = self._add(pg.PlotDataItem(connect="pairs", pen=pg.mkPen(
            "#c05621", width=1, style=Qt.PenStyle.DashLine)))
        self.interval = self._add(pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), beam=0.1,
                                                  pen=pg.mkPen("#1f2933", width=1.5)))
        self.calibrated = self._add(pg.ScatterPlotItem(symbol="d", size=12, pen=None,
                                                       brush="#1f2933"))
        self.labels: list[pg.TextItem] = []
        self.legend = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.legend)

    def _style_plot(self) -> None:
        p = self.plot
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setMouseEnabled(x=False, y=False)
        p.showGrid(y=True, alpha=0.15)
        p.setLabel("left", "GiB per GPU")
        p.getAxis("bottom").setStyle(tickLength=0)
        p.getAxis("bottom").setHeight(46)  # two lines: the GPU and its capacity

    def _add(self, item):
        self.plot.addItem(item)
        return item

    # ---- Public API

    def show_bars(self, bars: list[Bar]) -> None:
        """Draw ``bars`` (the fast path the what-if sliders take)."""
        self.bars = bars
        x = np.arange(len(bars), dtype=float)
        bottom = np.zeros(len(bars))
        for name in SEGMENTS:
            height = np.array([dict(b.segments).get(name, 0.0) for b in bars])
            self.stack[name].setOpts(x=x, y0=bottom.copy(), height=height)
            bottom += height
        self._draw_capacity(x, bars)
        self._draw_calibrated(x, bars)
        self._draw_labels(x, bars, bottom)
        top = max([b.capacity_gib for b in bars] + list(bottom)
                  + [b.calibrated.high_gib for b in bars if b.calibrated] + [1.0])
        self.plot.setYRange(0, top * 1.14, padding=0)
        self.plot.setXRange(-0.6, max(len(bars), 1) - 0.4, padding=0)
        self.plot.getAxis("bottom").setTicks(
            [[(i, f"{b.label}\n{b.capacity_gib:g} GiB") for i, b in enumerate(bars)]])
        self.legend.setText(_legend(bars))

    def bar_data(self) -> dict[str, list[float]]:
        """Each component's heights in GiB, bar by bar, as drawn."""
        return {name: [float(h) for h in np.atleast_1d(item.opts["height"])]
                for name, item in self.stack.items()}

    def png(self) -> bytes:
        """The chart and its legend as a PNG (for the exported report)."""
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        self.grab().save(buffer, "PNG")
        return bytes(data.data())

    # ---- Private API

    def _draw_capacity(self, x: np.ndarray, bars: list[Bar]) -> None:
        capacity = np.array([b.capacity_gib for b in bars])
        low, limit = (np.array([b.band[i] for b in bars]) for i in (0, 1))
        self.band.setOpts(x=x, y0=low, height=capacity - low)
        edges = np.repeat(x, 2) + np.tile([-SLOT / 2, SLOT / 2], len(bars))
        self.capacity.setData(edges, np.repeat(capacity, 2))
        self.limit.setData(edges, np.repeat(limit, 2))

    def _draw_calibrated(self, x: np.ndarray, bars: list[Bar]) -> None:
        found = [(i, b.calibrated) for i, b in zip(x, bars, strict=True) if b.calibrated]
        cx = np.array([i + CALIBRATED_OFFSET for i, _ in found])
        y = np.array([c.gib for _, c in found])
        self.calibrated.setData(cx, y)
        self.interval.setData(x=cx, y=y, top=np.array([c.high_gib - c.gib for _, c in found]),
                              bottom=np.array([c.gib - c.low_gib for _, c in found]))

    def _draw_labels(self, x: np.ndarray, bars: list[Bar], tops: np.ndarray) -> None:
        while len(self.labels) < len(bars):
            label = pg.TextItem(anchor=(0.5, 1.0))
            self.plot.addItem(label)
            self.labels.append(label)
        for i, label in enumerate(self.labels):
            label.setVisible(i < len(bars))
            if i < len(bars):
                b = bars[i]
                label.setHtml(f"<span style='color:{VERDICT_COLOURS[b.verdict]}; "
                              f"font-weight:600; font-size:8pt'>{b.status}</span>")
                label.setPos(x[i], max(tops[i], b.capacity_gib, b.device_gib) * 1.01)


def _legend(bars: list[Bar]) -> str:
    shown = [n for n in SEGMENTS if any(dict(b.segments).get(n, 0.0) > 0.005 for b in bars)]
    items = [_swatch(COLOURS[n], LABELS[n]) for n in shown]
    items.append("<span style='color:#1f2933'>━━</span>&nbsp;capacity")
    items.append(_swatch("#f8dcc0", "keep free: 15–20 % (dashed: 15 %)"))
    if any(b.calibrated for b in bars):
        items.append("<b>◆</b>&nbsp;calibrated on your runs, 90 % interval (the verdicts above "
                     "the bars rest on it)")
    return "&nbsp;&nbsp; ".join(items)


def _swatch(colour: str, text: str) -> str:
    return f"<span style='color:{colour}'>■</span>&nbsp;{text}"
