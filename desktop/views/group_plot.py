"""Run groups on the plots panel: the "Group by" controls, and each group's band and centre line.

The plots panel passes every spec it builds through :meth:`GroupPlot.apply`:
members are faded or left out, and each group's centre joins its panels as a
curve (``run_id`` "group:KEY") with its band, so the grid draws, ranges, reads
out, lists in the legend and exports the groups as it does runs. What is drawn
is computed by :mod:`desktop.presenters.groups`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QLineEdit,
    QMenu,
    QSizePolicy,
    QToolButton,
    QWidget,
    QWidgetAction,
)

from desktop.compare_services import CompareServices
from desktop.presenters import group_choices, plot_data
from desktop.presenters.groups import BANDS, STATS, GroupCurve, Grouping, group_panels
from desktop.presenters.plot_data import PlotSpec
from desktop.services import AppServices

CENTRE_WIDTH = 2.2
LABEL_CHARS = 14


class GroupPlot(QObject):
    """Groups the plotted runs as the shared :class:`Grouping` says."""

    def __init__(self, services: AppServices, compare: CompareServices, redraw: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._compare = compare
        self._groups: list[list[GroupCurve]] = []
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
        for panel, curves in zip(spec.panels, self._groups, strict=True):
            for curve in curves:
                panel.curves.append(_centre(curve))
                if (curve.band.high > curve.band.low).any():
                    panel.bands.append(plot_data.Band(curve.band.x, curve.band.low,
                                                      curve.band.high, curve.colour,
                                                      curve.label, _key(curve), curve.metric))
        return spec

    def _on_grouping(self, grouping: Grouping) -> None:
        self.bar.set_grouping(grouping)
        self._redraw()

    def _suggestions(self) -> list[str]:
        runs = self._services.runs(list(self._services.selected))
        configs = self._services.configs([r.id for r in runs])
        return group_choices.suggestions(runs, configs)


def _key(curve: GroupCurve) -> str:
    return f"group:{curve.key}"


def _centre(curve: GroupCurve) -> plot_data.Curve:
    """A group's centre as a curve of the panel: bold, dashed for the panel's overlay metric."""
    band = curve.band
    none = np.empty(0)
    return plot_data.Curve(_key(curve), curve.label, curve.metric, curve.colour, band.x,
                           band.centre, None, curve.overlay, none, none,
                           tip=f"{curve.label}: {len(curve.run_ids)} runs", width=CENTRE_WIDTH)


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
        # Never squeezed: in a narrow window the tool bar moves it behind its » button.
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.set_grouping(grouping)

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
