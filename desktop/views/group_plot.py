"""Run groups on the plots panel: the "Group by" controls, and each group's band and centre line.

The plots panel calls :meth:`GroupPlot.apply` on the spec it built (members
faded or left out) and :meth:`GroupPlot.draw` after drawing it (bands and
centres added, the legend naming groups). What is drawn is computed by
:mod:`desktop.presenters.groups`; this module only strokes and fills it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QLineEdit,
    QMenu,
    QSizePolicy,
    QToolButton,
    QWidget,
    QWidgetAction,
)

from desktop.compare_services import compare_for
from desktop.presenters import group_choices
from desktop.presenters.groups import (
    BANDS,
    STATS,
    GroupCurve,
    Grouping,
    envelope,
    group_panels,
)
from desktop.presenters.plot_data import PlotSpec
from desktop.services import AppServices
from desktop.settings import Settings

if TYPE_CHECKING:
    from desktop.views.metric_plot import MetricPlot
    from desktop.views.plotting import pg

BAND_ALPHA = 56
EDGE_ALPHA = 110
LABEL_CHARS = 18
LONG_CURVE = 2000
BUCKETS = 1500  # a band's resolution across the view
MIN_WIDTH = 28


class GroupPlot(QObject):
    """Groups the plotted runs as the shared :class:`Grouping` says, and draws the groups."""

    def __init__(self, services: AppServices, settings: Settings, redraw: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._compare = compare_for(services, settings)
        self._groups: list[list[GroupCurve]] = []
        self._bands: list[_Band | None] = []  # kept alive: each follows its panel's view
        self.bar = GroupBar(self._compare.grouping, self._suggestions)
        self.bar.sig_changed.connect(self._compare.set_grouping)
        self._compare.sig_grouping_changed.connect(self._on_grouping)
        self._redraw = redraw

    @property
    def active(self) -> bool:
        """Whether the last spec was grouped (a live update then redraws it whole)."""
        return bool(self._groups)

    def apply(self, spec: PlotSpec) -> PlotSpec:
        """The spec to draw under the groups (unchanged when grouping is off)."""
        self._groups = []
        grouping = self._compare.grouping
        assignment = self._compare.assignment(list(self._services.selected))
        self.bar.show_error(self._compare.error)
        if not grouping.active or not assignment:
            return spec
        spec, self._groups = group_panels(spec, assignment, grouping)
        return spec

    def draw(self, plots: list[MetricPlot], legend: pg.LegendItem) -> None:
        """Add each group's band and centre to its panels, and name the groups in the legend."""
        if not self._groups:
            return
        from desktop.views.plotting import pg

        legend.clear()
        named: set[str] = set()
        self._bands = []
        for plot, curves in zip(plots, self._groups, strict=False):
            for curve in curves:
                centre, band = _draw(plot.plot, curve, pg)
                self._bands.append(band)
                if curve.key not in named and not curve.overlay:
                    named.add(curve.key)
                    legend.addItem(centre, curve.label)
        legend.setColumnCount(min(4, max(1, len(named))))

    def _on_grouping(self, grouping: Grouping) -> None:
        self.bar.set_grouping(grouping)
        self._redraw()

    def _suggestions(self) -> list[str]:
        runs = self._services.runs(list(self._services.selected))
        configs = {r.id: self._services.config(r.id) for r in runs}
        return group_choices.suggestions(runs, configs)


def _draw(plot: pg.PlotItem, curve: GroupCurve, pg) -> tuple[pg.PlotDataItem, _Band | None]:
    """The band (two faint edges and the fill between them) under a bold centre line."""
    band = curve.band
    colour = QColor(curve.colour)
    shaded = _Band(plot, curve, pg) if (band.high > band.low).any() else None
    style = Qt.PenStyle.DashLine if curve.overlay else Qt.PenStyle.SolidLine
    long = len(band.x) > LONG_CURVE  # wide antialiased strokes of long curves are slow in Qt
    centre = pg.PlotDataItem(band.x, band.centre, name=curve.label, connect="finite",
                             antialias=not long,
                             pen=pg.mkPen(colour, width=2.0 if long else 2.2, style=style))
    plot.addItem(centre)
    return centre, shaded


class _Band:
    """A group's band, filled between its edges as the view shows them.

    Filling between two 100,000-point curves costs seconds in Qt; the band is
    reduced to :data:`BUCKETS` buckets of the range in view (each bucket the
    lowest low and highest high of its points) and again after every pan or zoom.
    """

    def __init__(self, plot: pg.PlotItem, curve: GroupCurve, pg) -> None:
        self._band = curve.band
        edge = QColor(curve.colour)
        edge.setAlpha(EDGE_ALPHA)
        fill = QColor(curve.colour)
        fill.setAlpha(BAND_ALPHA)
        self.low = pg.PlotCurveItem(pen=pg.mkPen(edge, width=0.8), antialias=False)
        self.high = pg.PlotCurveItem(pen=pg.mkPen(edge, width=0.8), antialias=False)
        self.fill = pg.FillBetweenItem(self.low, self.high, brush=fill)
        self._show(float(curve.band.x[0]), float(curve.band.x[-1]))  # until the view says
        for item in (self.low, self.high, self.fill):
            plot.addItem(item)
        plot.vb.sigXRangeChanged.connect(lambda _box, span: self._show(*span))

    def _show(self, start: float, stop: float) -> None:
        band = self._band
        x, low, high = envelope(band.x, band.low, band.high, start, stop, BUCKETS)
        self.low.setData(x, low, connect="finite")
        self.high.setData(x, high, connect="finite")

class GroupBar(QToolButton):
    """A "Groups" button whose menu sets the grouping: a field or pattern (typed or suggested),
    the centre statistic, the band and whether members show."""

    sig_changed = Signal(object)
    """The user chose another :class:`Grouping`."""

    def __init__(self, grouping: Grouping, suggest: Callable[[], list[str]],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent, popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        self._grouping = grouping
        self._suggest = suggest
        self.edit = QLineEdit(placeholderText="field, config.KEY or name~pattern",
                              clearButtonEnabled=True, minimumWidth=240)
        self.edit.setToolTip("Group the selected runs by a field (method, lora_rank, "
                             "config.KEY, tags) or by a pattern over the name: name~-seed\\d+")
        self.edit.returnPressed.connect(self._on_text)
        self._typed = QWidgetAction(self)  # the button owns it: clearing the menu keeps it
        self._typed.setDefaultWidget(self.edit)
        self.setMenu(QMenu(self))
        self.menu().aboutToShow.connect(self._fill)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.set_grouping(grouping)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """Narrow windows may squeeze the label: the toolbar must not widen the window."""
        return QSize(MIN_WIDTH, super().minimumSizeHint().height())

    def set_grouping(self, grouping: Grouping) -> None:
        self._grouping = grouping
        self.edit.setText(grouping.by)
        by = grouping.by if len(grouping.by) <= LABEL_CHARS else grouping.by[:LABEL_CHARS] + "…"
        self.setText(f"Groups: {by}" if grouping.active else "Groups")

    def show_error(self, message: str) -> None:
        """Mark the grouping red with the reason as its tooltip ("" clears it)."""
        self.setStyleSheet("color: #c62828;" if message else "")
        self.setToolTip(message or "Group the selected runs: each group's mean and band")

    def choose(self, by: str) -> None:
        """Group by ``by`` ("" stops grouping), as picking it in the menu does."""
        self._set(by=by.strip())

    def _fill(self) -> None:
        menu = self.menu()
        menu.clear()
        menu.addAction(self._typed)
        menu.addAction("No Groups", lambda: self.choose("")).setEnabled(self._grouping.active)
        suggested = self._suggest()
        if suggested:
            menu.addSection("Fields that group the selected runs")
        for text in suggested:
            action = menu.addAction(text, lambda t=text: self.choose(t))
            action.setCheckable(True)
            action.setChecked(text == self._grouping.by)
        for title, choices, field in (("Centre", STATS, "stat"), ("Band", BANDS, "band")):
            menu.addSection(title)
            for key, text in choices.items():
                action = menu.addAction(text, lambda f=field, k=key: self._set(**{f: k}))
                action.setCheckable(True)
                action.setChecked(getattr(self._grouping, field) == key)
        menu.addSeparator()
        members = menu.addAction("Show Member Runs", lambda: self._set(
            members=not self._grouping.members))
        members.setCheckable(True)
        members.setChecked(self._grouping.members)
        self.edit.setFocus()

    def _on_text(self) -> None:
        self.menu().close()
        self.choose(self.edit.text())

    def _set(self, **changes) -> None:
        grouping = replace(self._grouping, **changes)
        if grouping != self._grouping:
            self._grouping = grouping
            self.sig_changed.emit(grouping)
