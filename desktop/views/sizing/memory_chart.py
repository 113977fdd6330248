"""The result page's chart: memory per GPU on the leading figure, against each GPU's capacity.

The items are made once and only their data changes, so a what-if slider
redraws in a few milliseconds (bench/wizard_update.py). Each bar is as tall
as the figure its verdict rests on; every other figure is a marker beside it,
one scatter item per kind in ``memory_bars.MARKERS`` (made when a kind first
appears), so a new kind of figure only needs its entry there. Under each
capacity line, the band the seed article says to keep free (15–20 %); the
selected plan's bar is outlined. A run far too big for every card would
flatten the others, so the axis stops at 1.6 times the largest card.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from desktop.presenters.memory_bars import COLOURS, LABELS, LEADS, MARKERS, SEGMENTS, Bar
from desktop.views.plotting import pg

BAR_WIDTH = 0.5
SLOT = 0.86  # the width of a GPU's place: capacity line and margin band
MARKER_OFFSET = 0.34  # markers sit right of their bar, the next one a step further
MARKER_STEP = 0.09
MARGIN_BRUSH = (242, 142, 43, 45)
SELECTED_COLOUR = "#1d4ed8"
VERDICT_COLOURS = {"fits": "#2f7d32", "tight": "#b26a00", "short": "#b3261e"}
CLIP = 1.6  # bars taller than this many times the largest card are cut (their label says so)
AXIS_POINT_SIZE = 8
AXIS_LINES = 4  # GPU and capacity, as asked or which plan, how many GPUs (and nodes)


class MemoryChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self._style_plot()
        self.bars: list[Bar] = []
        self.ticks: list[str] = []  # the axis labels, as drawn
        self.band = self._add(pg.BarGraphItem(x=[], height=[], width=SLOT, brush=MARGIN_BRUSH,
                                              pen=None))
        self.stack = {name: self._add(pg.BarGraphItem(x=[], height=[], width=BAR_WIDTH,
                                                      brush=COLOURS[name], pen=pg.mkPen("w")))
                      for name in SEGMENTS}
        self.capacity = self._add(pg.PlotDataItem(connect="pairs",
                                                  pen=pg.mkPen("#1f2933", width=2)))
        self.limit = self._add(pg.PlotDataItem(connect="pairs", pen=pg.mkPen(
            "#c05621", width=1, style=Qt.PenStyle.DashLine)))
        self.selection = self._add(pg.BarGraphItem(x=[], height=[], width=SLOT + 0.08,
                                                   brush=None, pen=pg.mkPen(SELECTED_COLOUR, width=2)))
        self.markers: dict[str, tuple[pg.ScatterPlotItem, pg.ErrorBarItem]] = {}
        self.labels: list[pg.TextItem] = []
        self.legend = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText)
        self.legend.setMinimumHeight(2 * self.legend.fontMetrics().lineSpacing() + 4)
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
        font = QFont()
        font.setPointSize(AXIS_POINT_SIZE)
        axis = p.getAxis("bottom")
        axis.setStyle(tickLength=0, tickFont=font, hideOverlappingLabels=False)
        axis.setHeight(AXIS_LINES * (font.pointSize() + 6) + 6)

    def _add(self, item):
        self.plot.addItem(item)
        return item

    # ---- Public API

    def show_bars(self, bars: list[Bar], selected: int | None = None) -> None:
        """Draw ``bars``, outlining bar ``selected`` (the fast path the what-if sliders take)."""
        self.bars = bars
        x = np.arange(len(bars), dtype=float)
        bottom = np.zeros(len(bars))
        ceiling = CLIP * max([b.capacity_gib for b in bars] + [1.0])
        for name in SEGMENTS:
            height = np.array([dict(b.segments).get(name, 0.0) for b in bars])
            y0 = np.minimum(bottom, ceiling)
            self.stack[name].setOpts(x=x, y0=y0, height=np.minimum(bottom + height, ceiling) - y0)
            bottom += height
        top = min(max([b.capacity_gib for b in bars] + list(bottom)
                      + [m.high_gib or m.gib for b in bars for m in b.markers] + [1.0]),
                  ceiling) * 1.14
        self._draw_capacity(x, bars)
        self._draw_markers(x, bars)
        self._draw_labels(x, bars, bottom, ceiling)
        on = [selected] if selected is not None and selected < len(bars) else []
        self.selection.setOpts(x=x[on], y0=np.zeros(len(on)), height=np.full(len(on), top))
        self.plot.setYRange(0, top, padding=0)
        self.plot.setXRange(-0.6, max(len(bars), 1) - 0.4, padding=0)
        self.ticks = [_tick(b) for b in bars]
        self.plot.getAxis("bottom").setTicks([list(enumerate(self.ticks))])
        self.legend.setText(_legend(bars))

    def bar_data(self) -> dict[str, list[float]]:
        """Each component's heights in GiB, bar by bar, as drawn (cut at the ceiling)."""
        return {name: [float(h) for h in np.atleast_1d(item.opts["height"])]
                for name, item in self.stack.items()}

    def marker_data(self) -> dict[str, list[tuple[float, float]]]:
        """Each kind of marker's (x, GiB) points, as drawn."""
        return {kind: list(zip(*(map(float, a) for a in scatter.getData()), strict=True))
                for kind, (scatter, _) in self.markers.items()}

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

    def _draw_markers(self, x: np.ndarray, bars: list[Bar]) -> None:
        placed: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in self.markers}
        for i, b in zip(x, bars, strict=True):
            for j, m in enumerate(b.markers):
                low, high = m.low_gib or m.gib, m.high_gib or m.gib
                placed.setdefault(m.kind, []).append(
                    (i + MARKER_OFFSET + j * MARKER_STEP, m.gib, m.gib - low, high - m.gib))
        for kind, points in placed.items():
            scatter, interval = self._marker_items(kind)
            cx, y, below, above = np.array(points, dtype=float).reshape(-1, 4).T
            scatter.setData(cx, y)
            interval.setData(x=cx, y=y, top=above, bottom=below)

    def _marker_items(self, kind: str) -> tuple[pg.ScatterPlotItem, pg.ErrorBarItem]:
        if kind not in self.markers:
            symbol, _, colour, _ = MARKERS[kind]
            self.markers[kind] = (
                self._add(pg.ScatterPlotItem(symbol=symbol, size=11, pen=None, brush=colour)),
                self._add(pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), beam=0.08,
                                          pen=pg.mkPen(colour, width=1.5))))
        return self.markers[kind]

    def _draw_labels(self, x: np.ndarray, bars: list[Bar], tops: np.ndarray,
                     ceiling: float) -> None:
        """Each bar's verdict above it; a bar cut at the ceiling says so with an arrow."""
        while len(self.labels) < len(bars):
            label = pg.TextItem(anchor=(0.5, 1.0))
            self.plot.addItem(label)
            self.labels.append(label)
        for i, label in enumerate(self.labels):
            label.setVisible(i < len(bars))
            if i < len(bars):
                b = bars[i]
                cut = " ↑" if tops[i] > ceiling else ""
                label.setHtml(f"<span style='color:{VERDICT_COLOURS[b.verdict]}; "
                              f"font-weight:600; font-size:8pt'>{b.status}{cut}</span>")
                label.setPos(x[i], min(max(tops[i], b.capacity_gib), ceiling) * 1.01)


def _tick(b: Bar) -> str:
    name, *rest = b.label.split("\n")
    return "\n".join([name, f"{b.capacity_gib:g} GiB", *rest])


def _legend(bars: list[Bar]) -> str:
    shown = [n for n in SEGMENTS if any(dict(b.segments).get(n, 0.0) > 0.005 for b in bars)]
    items = [_swatch(COLOURS[n], LABELS[n]) for n in shown]
    items.append("<span style='color:#1f2933'>━━</span>&nbsp;capacity")
    margins = sorted({round(b.margin * 100) for b in bars})
    dashed = f"dashed: the {', '.join(map(str, margins))} % kept free" if margins else ""
    items.append(_swatch("#f8dcc0", f"keep free: 15–20 % ({dashed})"))
    leads = {b.lead for b in bars}
    for kind, (_, glyph, colour, name) in MARKERS.items():
        if any(m.kind == kind for b in bars for m in b.markers):
            items.append(f"<span style='color:{colour}'>{glyph}</span>&nbsp;{name}")
    if leads:
        what = LEADS[leads.pop()] if len(leads) == 1 else "each GPU's leading figure"
        items.append(f"<b>bars: {what}</b> (the verdicts rest on it)")
    return "&nbsp;&nbsp; ".join(items)


def _swatch(colour: str, text: str) -> str:
    return f"<span style='color:{colour}'>■</span>&nbsp;{text}"
