"""One metric panel: a pyqtgraph plot of the selected runs' curves, marks and hover readout.

Configured once for big series: peak (min/max) downsampling keeps spikes
visible, clip-to-view draws only the visible range, ``connect="finite"`` leaves
gaps at NaN/Inf (which are also marked with a red x), and raw curves behind
smoothed ones are left out of auto-range so one spike cannot flatten a plot.
A panel scrolled out of sight is parked: its curves skip the clipping and
downsampling of every pan until it is seen again.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from desktop.presenters import formatting as fmt
from desktop.presenters.plot_data import Curve, Panel, nearest
from desktop.views.plot_overlays import PlotOverlays
from desktop.views.plotting import pg

AXIS_WIDTH = 62  # the same for every panel, so stacked plots line up
RAW_ALPHA = 70
NAN_COLOUR = "#c62828"
MAX_SYMBOLS = 2000  # overlay points get markers only when they are few
MAX_READOUT_RUNS = 8
# Qt strokes antialiased lines wider than 1 px about 70x slower, and antialiasing a 1 px
# line still doubles a pan frame; the dense, downsampled strokes of long curves gain
# nothing visible from it. Long curves get 1 px without antialiasing (bench/gui.py).
LONG_CURVE = 2000
# Samples per pixel left after auto-downsampling (pyqtgraph's default is 5). In peak mode
# every bucket keeps its min and max, so 2 per pixel already draws every spike and
# halves the points stroked per frame. pyqtgraph has no setter for it, only this option.
SAMPLES_PER_PIXEL = 2.0


class MetricPlot:
    """Draws a :class:`Panel` into a ``PlotItem`` and answers hover questions about it."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.panel: Panel | None = None
        self.items: list[pg.PlotDataItem] = []  # the followed curve of each run, for the legend
        self._drawn: dict[tuple, _CurveItems] = {}  # each curve's items, to extend in place
        self.parked = False
        plot.setDownsampling(auto=True, mode="peak")
        plot.setClipToView(True)
        plot.showGrid(x=True, y=True, alpha=0.15)
        plot.getAxis("left").setWidth(AXIS_WIDTH)
        plot.setMenuEnabled(False)
        self.cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#7b8794", width=1))
        self.readout = pg.TextItem(anchor=(0, 0), fill=pg.mkBrush(255, 255, 255, 215),
                                   border=pg.mkPen("#cbd2d9"))
        self.readout.setParentItem(plot.vb)
        self.readout.setPos(6, 4)
        self.overlays = PlotOverlays(plot)  # checkpoints, findings, lineage
        self.hide_hover()

    # ---- Public API

    def draw(self, panel: Panel, log_y: bool, label_resumes: bool = True) -> None:
        """Replace what is drawn with ``panel``'s curves, NaN marks and resume lines."""
        self.plot.clear()
        self.panel, self.items, self._drawn = panel, [], {}
        self.plot.setTitle(panel.title, size="9pt", color="#323f4b")
        style = _Style.of(panel)
        for curve in panel.curves:
            self._add_curve(curve, style)
        for x, colour in panel.resumes:
            self._add_resume(x, colour, label_resumes)
        self.overlays.draw(panel.annotations, label_resumes)
        self.plot.addItem(self.cursor, ignoreBounds=True)
        self.plot.setLogMode(x=False, y=log_y)
        self.park(self.parked)
        self.hide_hover()

    def park(self, parked: bool) -> None:
        """Out of sight (True), the curves stop following the view; back in sight, they catch up."""
        self.parked = parked
        for drawn in self._drawn.values():
            drawn.park(parked)

    def extend(self, panel: Panel, run_ids: set[int]) -> bool:
        """Give the drawn curves of ``run_ids`` their points from ``panel`` in place.

        For a live run's new points: nothing is removed or re-added and the view
        keeps its zoom. False (nothing done) when more than points changed, such
        as the curves, their names, resume lines or marks: then :meth:`draw`.
        """
        drawn = self.panel
        if (drawn is None or _outline(panel) != _outline(drawn) or panel.resumes != drawn.resumes
                or panel.annotations != drawn.annotations):
            return False
        for curve in panel.curves:
            if curve.run_id in run_ids:
                self._drawn[_key(curve)].set_data(curve, self.plot)
        self.panel = panel
        return True

    def show_hover(self, x: float, x_label: str) -> None:
        """Move the cursor to ``x`` and list every run's value there."""
        if self.panel is None:
            return
        lines = [f"<b>{html.escape(x_label)}</b>"]
        for curve in self.panel.curves[: MAX_READOUT_RUNS * 2]:
            i = nearest(curve.x, x)
            if i is not None:
                lines.append(_readout_line(curve, i))
        self.cursor.setPos(x)
        self.cursor.show()
        self.readout.setHtml("<br>".join(lines))
        self.readout.show()

    def hide_hover(self) -> None:
        self.cursor.hide()
        self.readout.setHtml(f"<b>{html.escape(self.panel.title)}</b>" if self.panel else "")
        self.readout.setVisible(False)

    # ---- Private API

    def _add_curve(self, curve: Curve, style: _Style) -> None:
        colour = QColor(curve.colour)
        if curve.overlay:
            self._add_overlay(curve, colour, style)
            return
        raw = None
        if curve.smooth is not None:
            faint = QColor(colour)
            faint.setAlpha(RAW_ALPHA)
            raw = _line(curve.x, curve.y, pen=pg.mkPen(faint, width=1), antialias=style.antialias)
            self.plot.addItem(raw, ignoreBounds=True)
        main = _line(curve.x, curve.shown, pen=pg.mkPen(colour, width=style.width),
                     antialias=style.antialias, name=curve.label)
        self.plot.addItem(main)
        self.items.append(main)
        items = self._drawn[_key(curve)] = _CurveItems(main, raw)
        items.set_marks(curve, self.plot)

    def _add_overlay(self, curve: Curve, colour: QColor, style: _Style) -> None:
        few = len(curve.x) <= MAX_SYMBOLS
        item = _line(
            curve.x, curve.y, pen=pg.mkPen(colour, width=style.width, style=Qt.PenStyle.DashLine),
            antialias=style.antialias, symbol="o" if few else None, symbolSize=5,
            symbolBrush=colour, symbolPen=None,
        )
        self.plot.addItem(item)
        self._drawn[_key(curve)] = _CurveItems(item)

    def _add_resume(self, x: float, colour: str, label: bool) -> None:
        line = pg.InfiniteLine(
            pos=x, angle=90, movable=False,
            pen=pg.mkPen(colour, width=1.2, style=Qt.PenStyle.DashLine),
            label="resumed" if label else None,
            labelOpts={"position": 0.9, "color": colour, "anchors": [(0, 0.5), (0, 0.5)]},
        )
        self.plot.addItem(line, ignoreBounds=True)


class CompactAxis(pg.AxisItem):
    """Tick labels as people say big numbers (47K tokens/s, 1.3B tokens), not 4.7e+04."""

    def tickStrings(self, values, scale, spacing) -> list[str]:
        if max((abs(v * scale) for v in values), default=0) < 10_000:
            return super().tickStrings(values, scale, spacing)
        return [fmt.compact(v * scale) for v in values]


class _Line(pg.PlotDataItem):
    """A curve that skips clipping and downsampling to the view while it is parked."""

    def __init__(self, *args, **options) -> None:
        super().__init__(*args, **options)
        self._parked = self._missed = False

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:  # noqa: N802
        # pyqtgraph calls this at every pan and zoom (and its name is pyqtgraph's).
        if self._parked:
            self._missed = True
            return
        super().viewRangeChanged(vb, ranges, changed)

    def park(self, parked: bool) -> None:
        self._parked = parked
        if not parked and self._missed:
            self._missed = False
            super().viewRangeChanged()


class _CurveItems:
    """One curve's items: its line, the raw line behind a smoothed one, and NaN marks."""

    def __init__(self, main: _Line, raw: _Line | None = None) -> None:
        self.main, self.raw = main, raw
        self.marks: pg.PlotDataItem | None = None

    def park(self, parked: bool) -> None:
        for line in (self.main, self.raw):
            if line is not None:
                line.park(parked)

    def set_data(self, curve: Curve, plot: pg.PlotItem) -> None:
        self.main.setData(curve.x, curve.y if curve.overlay else curve.shown)
        if self.raw is not None:
            self.raw.setData(curve.x, curve.y)
        if not curve.overlay:
            self.set_marks(curve, plot)

    def set_marks(self, curve: Curve, plot: pg.PlotItem) -> None:
        """A red x at each NaN/Inf point (the item is added when the first one appears)."""
        if self.marks is not None:
            self.marks.setData(curve.bad_x, curve.bad_y)
        elif len(curve.bad_x):
            self.marks = pg.PlotDataItem(curve.bad_x, curve.bad_y, pen=None, symbol="x",
                                         symbolSize=10, symbolPen=pg.mkPen(NAN_COLOUR, width=2),
                                         symbolBrush=None)
            plot.addItem(self.marks)


def _key(curve: Curve) -> tuple:
    return curve.run_id, curve.metric, curve.overlay


@dataclass(frozen=True)
class _Style:
    """How a panel strokes its curves: fine and crisp while they are short, cheap once long."""

    width: float
    antialias: bool

    @staticmethod
    def of(panel: Panel) -> _Style:
        long = any(len(c.x) > LONG_CURVE for c in panel.curves)
        return _Style(1.0, False) if long else _Style(1.6, True)


def _outline(panel: Panel) -> tuple:
    """What a panel draws apart from the points: extending in place needs it unchanged."""
    return (panel.title, _Style.of(panel),
            [(*_key(c), c.label, c.colour, c.smooth is None) for c in panel.curves])


def _line(x, y, **options) -> _Line:
    """A curve with gaps at NaN/Inf, downsampled to :data:`SAMPLES_PER_PIXEL` when long."""
    item = _Line(x, y, connect="finite", **options)
    item.opts["autoDownsampleFactor"] = SAMPLES_PER_PIXEL
    return item


def _readout_line(curve: Curve, i: int) -> str:
    value = fmt.number(float(curve.shown[i]))
    if curve.smooth is not None:
        value += f" <span style='color:#7b8794'>(raw {fmt.number(float(curve.y[i]))})</span>"
    name = html.escape(curve.label if not curve.overlay else f"{curve.label} · {curve.metric}")
    return f"<span style='color:{curve.colour}'>■</span> {name}&nbsp;&nbsp;{value}"

