"""Draws a panel's annotations: checkpoint and finding marks, shaded finding ranges, lineage.

Shaded ranges sit behind the curves and never count for auto-range; marks are
one scatter item per kind with a hover tip per point. The focused finding
(selected in the findings list) gets a stronger shade and its title on the plot.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainterPath

from desktop.presenters.plot_marks import Annotations, Boundary, Mark, Region
from desktop.views.plotting import pg
from desktop.widgets.icons import SEVERITY_COLOURS

# Shade behind the curves: info findings (a note, not a problem) only when selected.
SHADE_ALPHA = {"critical": 34, "warning": 28, "info": 0}
FOCUS_ALPHA, EDGE_ALPHA = 80, 110
CHECKPOINT_SIZE, BEST_SIZE, FINDING_SIZE = 11, 18, 14
LABEL_COLOUR = "#323f4b"


def _pointer() -> QPainterPath:
    """A triangle whose tip is the point, its body above it (pointing down at the curve)."""
    path = QPainterPath()
    path.moveTo(0, 0)
    path.lineTo(-0.42, -0.8)
    path.lineTo(0.42, -0.8)
    path.closeSubpath()
    return path


POINTER = _pointer()


class PlotOverlays:
    """The annotation items of one plot, kept to highlight the focused finding."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.regions: list[tuple[Region, pg.LinearRegionItem]] = []
        self.checkpoints: pg.ScatterPlotItem | None = None
        self.findings: pg.ScatterPlotItem | None = None
        self.boundaries: list[pg.InfiniteLine] = []
        self._focus_label: pg.InfiniteLine | None = None

    def draw(self, annotations: Annotations, label_boundaries: bool) -> None:
        """Add the items (the plot was just cleared, so the old ones are gone)."""
        self.regions = [(r, self._add_region(r)) for r in annotations.regions]
        marks = annotations.marks
        self.checkpoints = self._add_marks([m for m in marks if m.kind == "checkpoint"],
                                           _checkpoint_spot)
        self.findings = self._add_marks([m for m in marks if m.kind == "finding"], _finding_spot)
        self.boundaries = [self._add_boundary(b, label_boundaries) for b in annotations.boundaries]
        self._focus_label = None

    def highlight(self, key: tuple[int, int] | None, label: bool) -> None:
        """Shade the finding ``key`` strongly (the others lightly); ``label`` adds its title."""
        if self._focus_label is not None:
            self.plot.removeItem(self._focus_label)
            self._focus_label = None
        for region, item in self.regions:
            _style(item, region, focused=region.key == key)
            if region.key == key and label and self._focus_label is None:
                self._focus_label = self._add_label(region)

    # ---- Items

    def _add_region(self, region: Region) -> pg.LinearRegionItem:
        item = pg.LinearRegionItem(values=(region.x0, region.x1), movable=False)
        _style(item, region, focused=False)
        item.setZValue(-20)
        item.setToolTip(region.tip)
        self.plot.addItem(item, ignoreBounds=True)
        return item

    def _add_marks(self, marks: list[Mark], spot) -> pg.ScatterPlotItem | None:
        if not marks:
            return None
        item = _Marks([spot(m) for m in marks])
        item.setZValue(20)
        self.plot.addItem(item, ignoreBounds=True)
        return item

    def _add_boundary(self, boundary: Boundary, label: bool) -> pg.InfiniteLine:
        pen = (pg.mkPen(boundary.colour, width=1.2, style=Qt.PenStyle.DashLine) if boundary.line
               else pg.mkPen(None))
        line = pg.InfiniteLine(
            pos=boundary.x, angle=90, movable=False, pen=pen,
            label=boundary.text if label else None,
            labelOpts={"position": 0.72, "color": boundary.colour,
                       "anchors": [(0, 0.5), (0, 0.5)]},
        )
        self.plot.addItem(line, ignoreBounds=True)
        return line

    def _add_label(self, region: Region) -> pg.InfiniteLine:
        text = region.tip.split("\n", 1)[0]
        line = pg.InfiniteLine(pos=region.x1, angle=90, movable=False, pen=pg.mkPen(None),
                               label=text, labelOpts={
                                   "position": 0.96, "color": LABEL_COLOUR,
                                   "fill": pg.mkBrush(255, 255, 255, 220),
                                   "anchors": [(0, 0), (0, 0)]})
        self.plot.addItem(line, ignoreBounds=True)
        return line


class _Marks(pg.ScatterPlotItem):
    """Marks with a hover tip each, that follow the plot's log-y mode as its curves do."""

    def __init__(self, spots: list[dict]) -> None:
        super().__init__(hoverable=True, tip=lambda x, y, data: data, pxMode=True)
        self._spots, self._log_y = spots, False
        self.setData(spots=spots)

    def setLogMode(self, x: bool, y: bool) -> None:  # noqa: N802 (pyqtgraph's name)
        if y != self._log_y:
            self._log_y = y
            self.setData(spots=[{**s, "pos": (s["pos"][0], math.log10(s["pos"][1]))}
                                for s in self._spots if s["pos"][1] > 0] if y else self._spots)


def _style(item: pg.LinearRegionItem, region: Region, focused: bool) -> None:
    """A finding's range: light, strong when selected, unseen for an unselected info note."""
    faint = SHADE_ALPHA.get(region.severity, SHADE_ALPHA["warning"])
    item.setBrush(_colour(region.severity, FOCUS_ALPHA if focused else faint))
    edge = pg.mkPen(_colour(region.severity, EDGE_ALPHA if focused or faint else 0))
    for line in item.lines:
        line.setPen(edge)


def _colour(severity: str, alpha: int) -> QColor:
    colour = QColor(SEVERITY_COLOURS.get(severity, "#7b8794"))
    colour.setAlpha(alpha)
    return colour


def _checkpoint_spot(mark: Mark) -> dict:
    colour = QColor(mark.colour)
    return {"pos": (mark.x, mark.y), "data": mark.tip,
            "symbol": "star" if mark.best else "d",
            "size": BEST_SIZE if mark.best else CHECKPOINT_SIZE,
            "pen": pg.mkPen(colour if mark.hollow else "w", width=1.3),
            "brush": pg.mkBrush("w" if mark.hollow else colour)}


def _finding_spot(mark: Mark) -> dict:
    colour = _colour(mark.severity, 255)
    return {"pos": (mark.x, mark.y), "data": mark.tip, "symbol": POINTER, "size": FINDING_SIZE,
            "pen": pg.mkPen(colour.darker(125), width=1), "brush": pg.mkBrush(colour)}

