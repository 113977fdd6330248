"""One metric panel: a pyqtgraph plot of the selected runs' curves, bands, marks and cursor.

Configured once for big series: peak (min/max) downsampling keeps spikes
visible, clip-to-view draws only the visible range, ``connect="finite"`` leaves
gaps at NaN/Inf (which are also marked with a red x). The y range is the
panel's own (``desktop.presenters.plot_ranges``): it follows the raw points in
view, optionally without outliers, and is never flat, until the user zooms y
(box zoom, Ctrl+wheel); a reset gives it back. A panel scrolled out of sight
is parked: its curves skip the clipping and downsampling of every pan until it
is seen again.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QPen

from desktop.presenters import formatting as fmt
from desktop.presenters.groups import envelope
from desktop.presenters.plot_data import Band, Curve, Panel
from desktop.presenters.plot_ranges import y_limits
from desktop.views.plot_overlays import PlotOverlays
from desktop.views.plotting import pg

AXIS_WIDTH = 62  # the same for every panel, so the grid's plots line up
RAW_ALPHA = 70
BAND_ALPHA, BAND_EDGE_ALPHA = 46, 90
BAND_BUCKETS = 1500  # a band's resolution across the view
FADED_ALPHA = 45  # the other runs' curves while one run is highlighted
NAN_COLOUR = "#c62828"
MAX_SYMBOLS = 2000  # overlay points get markers only when they are few
# Qt strokes antialiased lines wider than 1 px about 70x slower, and antialiasing a 1 px
# line still doubles a pan frame; the dense, downsampled strokes of long curves gain
# nothing visible from it. Long curves get 1 px without antialiasing (bench/gui.py).
LONG_CURVE = 2000
# Samples per pixel left after auto-downsampling (pyqtgraph's default is 5). In peak mode
# every bucket keeps its min and max, so one bucket per pixel column still draws every spike
# (the column is stroked from its lowest to its highest point), with a fifth of the default's
# points stroked per frame. pyqtgraph has no setter for it, only this option.
SAMPLES_PER_PIXEL = 1.0


class MetricPlot:
    """Draws a :class:`Panel` into a ``PlotItem`` and keeps its y range."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.panel: Panel | None = None
        self.items: list[pg.PlotDataItem] = []  # the followed curve of each run, for the legend
        self._drawn: dict[tuple, _CurveItems] = {}  # each curve's items, to extend in place
        self._bands: list[_BandItems] = []
        self.parked = False
        self.log_y = self.log_x = self.clip = False
        self.auto_y = True  # False once the user zoomed y; a reset gives it back
        plot.setDownsampling(auto=True, mode="peak")
        plot.setClipToView(True)
        plot.showGrid(x=True, y=True, alpha=0.15)
        for axis in ("left", "bottom"):  # behind the view: its curves cross the solid grid
            plot.getAxis(axis).setZValue(-1)
        plot.getAxis("left").setWidth(AXIS_WIDTH)
        plot.setMenuEnabled(False)
        plot.hideButtons()  # the corner "A": double-click and the panel's menu reset instead
        plot.vb.enableAutoRange(y=False)
        self.cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#7b8794", width=1))
        self.overlays = PlotOverlays(plot)  # checkpoints, findings, lineage
        self._fit = QTimer(plot, singleShot=True, interval=0)  # one y fit per burst of x moves
        self._fit.timeout.connect(self.fit_y)
        plot.sigXRangeChanged.connect(self._x_changed)
        self.hide_hover()

    # ---- Public API

    def draw(self, panel: Panel, log_y: bool = False, label_resumes: bool = True,
             clip: bool = False, log_x: bool = False) -> None:
        """Replace what is drawn with ``panel``'s curves, bands, NaN marks and resume lines."""
        self.plot.clear()
        self.panel, self.items, self._drawn, self._bands = panel, [], {}, []
        self.log_y, self.log_x, self.clip = log_y, log_x, clip
        self.plot.setTitle(panel.title, size="9pt", color="#323f4b")
        style = _Style.of(panel)
        for band in panel.bands:
            self._add_band(band)
        for curve in panel.curves:
            self._add_curve(curve, style)
        for x, colour in panel.resumes:
            self._add_resume(x, colour, label_resumes)
        self.overlays.draw(panel.annotations, label_resumes)
        self.plot.addItem(self.cursor, ignoreBounds=True)
        self._log_mode()
        self.park(self.parked)
        self.hide_hover()
        self.fit_y()

    def set_options(self, log_y: bool, clip: bool) -> None:
        """Log y and outlier clipping for this panel alone."""
        self.log_y, self.clip = log_y, clip
        self._log_mode()
        self.auto_y = True
        self.fit_y()

    def reset_view(self) -> None:
        """The whole runs in x, and the y range that follows them (after a zoom)."""
        self.auto_y = True
        self.plot.vb.enableAutoRange(x=True, y=False)
        self.fit_y()

    def set_y_range(self, low: float, high: float, padding: float = 0.0) -> None:
        """A y range of the user's (a zoom): kept until :meth:`reset_view`."""
        self.auto_y = False
        self.plot.setYRange(low, high, padding=padding)

    def fit_y(self) -> None:
        """Fit y to the raw points in view (no outliers when clipping), unless the user zoomed."""
        if not self.auto_y or self.panel is None:
            return
        low, high = self.plot.vb.viewRange()[0]
        if self.log_x:
            low, high = 10 ** low, 10 ** high
        limits = y_limits(self.panel, (low, high), self.clip, self.log_y)
        if limits is None:
            limits = y_limits(self.panel, None, self.clip, self.log_y)
        if limits is not None:
            self.plot.setYRange(*limits, padding=0)

    def park(self, parked: bool) -> None:
        """Out of sight (True), the curves stop following the view; back in sight, they catch up."""
        was = self.parked
        self.parked = parked
        for drawn in self._drawn.values():
            drawn.park(parked)
        if was and not parked:
            self._follow_bands()
            self.fit_y()

    def extend(self, panel: Panel, run_ids: set[int]) -> bool:
        """Give the drawn curves of ``run_ids`` their points from ``panel`` in place.

        For a live run's new points: nothing is removed or re-added and the view
        keeps its zoom. False (nothing done) when more than points changed, such
        as the curves, their names, bands, resume lines or marks: then :meth:`draw`.
        """
        drawn = self.panel
        if (drawn is None or _outline(panel) != _outline(drawn) or panel.resumes != drawn.resumes
                or panel.annotations != drawn.annotations or panel.bands or drawn.bands):
            return False
        for curve in panel.curves:
            if curve.run_id in run_ids:
                self._drawn[_key(curve)].set_data(curve, self.plot)
        self.panel = panel
        if not self.parked:
            self._fit.start()
        return True

    def highlight(self, run_id: Hashable | None) -> None:
        """Bring one run's curves forward and fade the others (None: all as drawn)."""
        for key, drawn in self._drawn.items():
            drawn.highlight(None if run_id is None else key[0] == run_id)

    def show_cursor(self, x: float) -> None:
        """The cursor line at the data's ``x`` (on every panel, the hovered one's readout)."""
        self.cursor.setPos(math.log10(x) if self.log_x and x > 0 else x)
        self.cursor.show()

    def hide_hover(self) -> None:
        self.cursor.hide()

    def data_x(self, view_x: float) -> float:
        """A view x (log10 of it on a log x axis) as the data's x."""
        return 10 ** view_x if self.log_x else view_x

    # ---- Private API

    def _log_mode(self) -> None:
        self.plot.setLogMode(x=self.log_x, y=self.log_y)
        self.plot.vb.enableAutoRange(y=False)  # pyqtgraph turns it on again: y is fitted here

    def _x_changed(self) -> None:
        if self.parked:
            return
        self._follow_bands()
        if self.auto_y:
            self._fit.start()

    def _follow_bands(self) -> None:
        if self._bands:
            low, high = (self.data_x(v) for v in self.plot.vb.viewRange()[0])
            for band in self._bands:
                band.show(low, high)

    def _add_curve(self, curve: Curve, style: _Style) -> None:
        colour = QColor(curve.colour)
        width = curve.width or style.width
        if curve.overlay:
            self._add_overlay(curve, colour, width, style)
            return
        raw = None
        if curve.smooth is not None:
            faint = QColor(colour)
            faint.setAlpha(RAW_ALPHA)
            raw = _line(curve.x, curve.y, pen=pg.mkPen(faint, width=1), antialias=style.antialias)
            self.plot.addItem(raw)
        main = _line(curve.x, curve.shown, pen=pg.mkPen(colour, width=width),
                     antialias=style.antialias, name=curve.label)
        self.plot.addItem(main)
        self.items.append(main)
        items = self._drawn[_key(curve)] = _CurveItems(main, raw, width)
        items.set_marks(curve, self.plot)

    def _add_overlay(self, curve: Curve, colour: QColor, width: float, style: _Style) -> None:
        few = len(curve.x) <= MAX_SYMBOLS
        item = _line(
            curve.x, curve.y, pen=pg.mkPen(colour, width=width, style=Qt.PenStyle.DashLine),
            antialias=style.antialias, symbol="o" if few else None, symbolSize=5,
            symbolBrush=colour, symbolPen=None,
        )
        self.plot.addItem(item)
        self._drawn[_key(curve)] = _CurveItems(item, width=width)

    def _add_band(self, band: Band) -> None:
        items = _BandItems(band)
        for item in (items.low, items.high, items.fill):
            self.plot.addItem(item)
        self._bands.append(items)

    def _add_resume(self, x: float, colour: str, label: bool) -> None:
        line = pg.InfiniteLine(
            pos=x, angle=90, movable=False,
            pen=pg.mkPen(colour, width=1.2, style=Qt.PenStyle.DashLine),
            label="resumed" if label else None,
            labelOpts={"position": 0.9, "color": colour, "anchors": [(0, 0.5), (0, 0.5)]},
        )
        self.plot.addItem(line, ignoreBounds=True)


class SolidGrid:
    """Grid lines in solid colours, drawn behind the curves rather than faint over them.

    pyqtgraph draws the grid as the axes' ticks, translucent and above the curves; Qt's
    raster engine blends translucent lines several times slower than it draws solid ones,
    and the grid then costs more than four 1M-point curves in a pan frame (bench/gui.py).
    Each line gets the colour it had over the background, and the axes are put behind
    the view (:class:`MetricPlot`), so the curves cross the grid instead of under it.
    """

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph's)
        specs = super().generateDrawSpecs(p)
        if specs is None or self.grid is False:
            return specs
        axis, ticks, texts = specs
        return axis, [(_solid(pen), start, stop) for pen, start, stop in ticks], texts


def _solid(pen: QPen) -> QPen:
    solid = QPen(pen)
    solid.setColor(_over_background(pen.color().getRgb(), pg.getConfigOption("background")))
    return solid


@functools.cache
def _over_background(rgba: tuple[int, int, int, int], background: str) -> QColor:
    """The solid colour a translucent ``rgba`` shows over ``background``."""
    alpha, under = rgba[3] / 255, pg.mkColor(background).getRgb()
    return QColor(*(round(alpha * c + (1 - alpha) * b) for c, b in zip(rgba[:3], under[:3],
                                                                       strict=True)))


class GridAxis(SolidGrid, pg.AxisItem):
    """An axis whose grid is solid (:class:`SolidGrid`)."""


class DateGridAxis(SolidGrid, pg.DateAxisItem):
    """A wall-clock axis whose grid is solid (:class:`SolidGrid`)."""


class CompactAxis(GridAxis):
    """Tick labels as people say big numbers (47K tokens/s, 1.3B tokens), not 4.7e+04; on a
    log axis, only decades (1e-05, 0.0001, 0.001…), never a crowd of overlapping minors."""

    def tickStrings(self, values, scale, spacing) -> list[str]:  # noqa: N802 (pyqtgraph's)
        if self.logMode:
            return [f"{10 ** v:g}" for v in values]
        if max((abs(v * scale) for v in values), default=0) < 10_000:
            return super().tickStrings(values, scale, spacing)
        return [fmt.compact(v * scale) for v in values]

    def logTickValues(self, minVal, maxVal, size, stdTicks):  # noqa: N802, N803
        low, high = math.floor(minVal), math.ceil(maxVal)
        decades = [v for v in range(low, high + 1) if minVal <= v <= maxVal]
        if len(decades) >= 2:
            step = max(1, math.ceil(len(decades) / max(2, int(size // 36))))
            return [(float(step), [float(v) for v in decades[::step]])]
        ticks = [v + math.log10(m) for v in range(low, high + 1) for m in (1, 2, 5)]
        return [(None, [t for t in ticks if minVal <= t <= maxVal])]


class _BandItems:
    """A shaded band, filled between its edges as the view shows them.

    Filling between two 100,000-point curves costs seconds in Qt; the band is
    reduced to :data:`BAND_BUCKETS` buckets of the range in view (each the lowest
    low and highest high of its points) and again after every pan or zoom.
    """

    def __init__(self, band: Band) -> None:
        self.band = band
        edge, fill = QColor(band.colour), QColor(band.colour)
        edge.setAlpha(BAND_EDGE_ALPHA)
        fill.setAlpha(BAND_ALPHA)
        self.low = pg.PlotDataItem(pen=pg.mkPen(edge, width=0.8), antialias=False)
        self.high = pg.PlotDataItem(pen=pg.mkPen(edge, width=0.8), antialias=False)
        self.fill = pg.FillBetweenItem(self.low, self.high, brush=pg.mkBrush(fill))
        for item in (self.low, self.high, self.fill):
            item.setZValue(-10)
        if len(band.x):
            self.show(float(band.x[0]), float(band.x[-1]))  # until the view says

    def show(self, start: float, stop: float) -> None:
        band = self.band
        x, low, high = envelope(band.x, band.low, band.high, start, stop, BAND_BUCKETS)
        self.low.setData(x, low, connect="finite")
        self.high.setData(x, high, connect="finite")


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

    def __init__(self, main: _Line, raw: _Line | None = None, width: float = 1.0) -> None:
        self.main, self.raw, self.width = main, raw, width
        self.pen = main.opts["pen"]
        self.marks: pg.PlotDataItem | None = None

    def park(self, parked: bool) -> None:
        for line in (self.main, self.raw):
            if line is not None:
                line.park(parked)

    def highlight(self, on: bool | None) -> None:
        """Stroked wider (on), faded (off), or as drawn (None)."""
        pen = pg.mkPen(self.pen)
        if on:
            pen.setWidthF(self.width + 1.5)
        elif on is False:
            colour = pen.color()
            colour.setAlpha(FADED_ALPHA)
            pen.setColor(colour)
        self.main.setPen(pen)
        self.main.setZValue(5 if on else 0)

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
