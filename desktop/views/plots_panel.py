"""The plots panel: a grid of metric panels sharing one x axis, for the selected runs.

The toolbar chooses metrics, the x axis (linear or log), smoothing and the grid's
columns (all remembered); each panel has its own height (drag its grip), log y,
outlier clipping, export and a Hide command in its right-click menu. Series load
in the background and the panel redraws from what it has cached, smoothing each
curve once; panels without a point are not shown. Export writes the grid as PNG
or SVG, or the shown points as CSV. pyqtgraph is imported when there is first
something to plot, so the window paints before it is.

Other features draw into the panels through :meth:`PlotsPanel.add_contributor`
(see ``desktop.presenters.plot_data``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QPointF, QRect, Qt, QTimer
from PySide6.QtWidgets import (
    QGridLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.compare_services import CompareServices
from desktop.presenters import plot_axes, plot_data
from desktop.presenters.plot_data import PlotSpec, PlottedRun
from desktop.presenters.plot_marks import Focus
from desktop.services import AppServices, series_version
from desktop.settings import Settings
from desktop.views import plot_focus, scene_export
from desktop.views.group_plot import GroupPlot
from desktop.views.plot_legend import PlotLegend
from desktop.views.plot_toolbar import EXPORTS, PlotToolbar

if TYPE_CHECKING:
    from desktop.views.metric_plot import MetricPlot
    from desktop.views.plot_cell import PlotCell

DEFAULT_HEIGHT = 210
SELECT_RUNS = "Select runs in the table to plot them (Ctrl+click or Shift+click for several)."
NO_METRICS = "The selected runs have no metric series to plot."
Contributor = Callable[[PlotSpec, list[PlottedRun]], None]


class PlotsPanel(QWidget):
    def __init__(self, services: AppServices, settings: Settings, compare: CompareServices,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services, self._settings = services, settings
        self._data: dict[int, PlottedRun] = {}
        self._drawn_axis = ""
        self.spec: PlotSpec | None = None
        self.cells: list[PlotCell] = []
        self._contributors: list[Contributor] = []
        self._smoothed = plot_data.SmoothingCache()
        self._focus: Focus | None = None  # the finding selected in the findings list
        self._zoom_pending = False  # zoom to it once its run is drawn
        self._hovers: list = []  # rate-limited mouse-move proxies, one per cell
        self._redraw = QTimer(self, singleShot=True, interval=120)
        self._redraw.timeout.connect(self.rebuild)
        self.toolbar = PlotToolbar(settings, self)
        self.toolbar.sig_changed.connect(self._on_toolbar)
        self.toolbar.sig_export.connect(self.export_dialog)
        self.toolbar.metrics_menu.aboutToShow.connect(self._fill_metrics_menu)
        self.legend = PlotLegend(self.highlight)
        self.groups = GroupPlot(services, compare, self.rebuild, self)  # bands of run groups
        self.toolbar.add_tool(self.groups.bar)
        self._make_plots()
        self._layout()
        services.sig_selection_changed.connect(self._on_selection)
        services.sig_runs_changed.connect(self._on_runs_changed)
        services.sig_checkpoints_changed.connect(self._on_checkpoints_changed)
        services.sig_findings_changed.connect(self._reload)
        services.sig_focus_requested.connect(self.focus)

    # ---- Building the widget

    def _make_plots(self) -> None:
        self.scroll = QScrollArea(widgetResizable=True, frameShape=QScrollArea.Shape.NoFrame)
        self.grid = QWidget()
        self.grid.setStyleSheet("background: white;")
        self.grid_layout = QGridLayout(self.grid)
        self.grid_layout.setContentsMargins(0, 0, 0, 0)
        self.grid_layout.setSpacing(4)
        self.grid_layout.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.scroll.setWidget(self.grid)
        bar = self.scroll.verticalScrollBar()
        bar.valueChanged.connect(self._park_hidden)
        bar.rangeChanged.connect(self._park_hidden)
        self.message = QLabel(SELECT_RUNS, alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.message.setStyleSheet("color: #616e7c; font-size: 13px;")
        self.notes = QLabel(wordWrap=True)
        self.notes.setStyleSheet("color: #8d6e00;")
        self.notes.hide()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.scroll)

    def _layout(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.legend)
        layout.addWidget(self.notes)
        layout.addWidget(self.stack, 1)
        self.legend.hide()

    # ---- Public API

    @property
    def smoothing(self) -> float:
        return self.toolbar.smoothing

    @property
    def axis(self) -> str:
        return self.toolbar.axis

    @property
    def panels(self) -> list[MetricPlot]:
        """The drawn panels' plots, in grid order."""
        return [cell.plot for cell in self.cells]

    def metrics(self) -> list[str]:
        """The panels shown now (the user's choice where the runs have it, else the defaults)."""
        available = {m for run in self._shown_runs() for m in run.series}
        return plot_data.choose_metrics(available, self._settings.metrics)

    def set_metrics(self, metrics: list[str]) -> None:
        """Show these panels (empty list: back to the defaults) and remember the choice."""
        self._settings.metrics = metrics
        self.rebuild()

    def add_contributor(self, contributor: Contributor) -> None:
        """Let ``contributor(spec, runs)`` add curves and bands to every build (and redraw)."""
        self._contributors.append(contributor)
        self.rebuild()

    def remove_contributor(self, contributor: Contributor) -> None:
        self._contributors.remove(contributor)
        self.rebuild()

    def rebuild(self) -> None:
        """Recompute every curve from the cached series and redraw."""
        runs = self._shown_runs()
        metrics = self.metrics()
        if not runs or not metrics:
            self.spec = None
            self._show_message(SELECT_RUNS if not runs else NO_METRICS)
            return
        spec = self._build(runs, metrics)
        if not spec.panels:
            self.spec = None
            self._show_message(NO_METRICS if not spec.notes else "; ".join(spec.notes))
            return
        self.spec = spec
        self.draw(spec)

    def export(self, path: Path, metric: str | None = None) -> None:
        """Write the plots (or one panel) to ``path``: PNG or SVG image, or CSV of the points in
        view."""
        cells = [c for c in self.cells if metric in (None, c.metric_name)]
        if path.suffix.lower() == ".csv":
            spec = self.spec or PlotSpec([], "step", "step")
            shown = PlotSpec([p for p in spec.panels if metric in (None, p.metric)], spec.axis,
                             spec.x_label)
            with path.open("w", newline="", encoding="utf-8") as out:
                plot_data.write_csv(out, shown, self._x_range())
        elif metric is not None and cells:
            scene_export.save(cells[0].plot.plot, path)
        else:
            self._unpark_all()
            scene_export.save_widget(self.grid, path, [self.legend])

    def highlight(self, run_id: Hashable | None) -> None:
        """Bring one run's curves forward on every panel (None: none)."""
        for plot in self.panels:
            plot.highlight(run_id)

    # ---- Drawing

    def draw(self, spec: PlotSpec) -> None:
        """Show prepared curves (:meth:`rebuild` prepares them from the cached series)."""
        if not self._same_layout(spec):
            self._new_cells(spec)
        log_y, clip = (set(self._settings.panel_option(o)) for o in ("log_y", "clip"))
        for i, (panel, cell) in enumerate(zip(spec.panels, self.cells, strict=True)):
            cell.plot.draw(panel, panel.metric in log_y, label_resumes=i == 0,
                           clip=panel.metric in clip, log_x=self.toolbar.log_x)
        self._label_x(spec.x_label)
        self.legend.show_spec(spec)
        notes = spec.notes + ([f"no points to show: {', '.join(spec.hidden)}"]
                              if spec.hidden else [])
        self.notes.setText("Not shown — " + "; ".join(notes) if notes else "")
        self.notes.setVisible(bool(notes))
        self.stack.setCurrentWidget(self.scroll)
        QTimer.singleShot(0, self, self._park_hidden)
        self._show_focus(spec)

    def focus(self, focus: Focus | None) -> None:
        """Highlight a finding and zoom to its steps (adding its metric's panel if hidden)."""
        if focus is None and self._focus is not None:
            plot_focus.unzoom(self.panels)
        self._focus, self._zoom_pending = focus, focus is not None
        available = plot_data.with_families(m for run in self._shown_runs() for m in run.series)
        shown = self.metrics()
        if focus is not None and focus.metric in available and focus.metric not in shown:
            self.set_metrics(shown + [focus.metric])  # redraws, and zooms when drawn
        elif self.spec is not None:
            self._show_focus(self.spec)

    def _build(self, runs: list[PlottedRun], metrics: list[str]) -> PlotSpec:
        spec = plot_data.build(runs, metrics, self.axis, self.smoothing, self._smoothed,
                               self.toolbar.smoothing_kind)
        for contributor in self._contributors:
            contributor(spec, runs)
        return self.groups.apply(spec)

    def _show_focus(self, spec: PlotSpec) -> None:
        plot_focus.highlight(self.panels, self._focus)
        if self._zoom_pending and self._focus is not None:
            self._zoom_pending = not plot_focus.zoom(self.panels, spec, self._focus)

    def _same_layout(self, spec: PlotSpec) -> bool:
        return ([c.metric_name for c in self.cells] == [p.metric for p in spec.panels]
                and self._drawn_axis == spec.axis)

    def _new_cells(self, spec: PlotSpec) -> None:
        from desktop.views.plot_cell import PlotCell
        from desktop.views.plotting import pg

        for proxy in self._hovers:
            proxy.disconnect()  # a pending move must not reach a cell about to go
        for cell in self.cells:
            self.grid_layout.removeWidget(cell)
            cell.hide()  # gone from the grid now, deleted once the event loop turns
            cell.deleteLater()
        self.cells, self._hovers = [], []
        for panel in spec.panels:
            height = self._settings.panel_height(panel.metric, DEFAULT_HEIGHT)
            cell = PlotCell(panel.metric, height, self._panel_menu, wall_axis=spec.axis == "wall")
            cell.sig_height_changed.connect(self._settings.set_panel_height)
            cell.view.viewport().installEventFilter(self)
            if self.cells:
                cell.plot.plot.setXLink(self.cells[0].plot.plot)
            self._hovers.append(pg.SignalProxy(
                cell.view.scene().sigMouseMoved, rateLimit=60,
                slot=lambda event, c=cell: self._on_mouse(c, event[0])))
            self.cells.append(cell)
        self._place_cells()
        for cell in self.cells:
            cell.show()
        self.grid_layout.activate()  # sized now: the first draw downsamples to their width
        self._drawn_axis = spec.axis

    def _place_cells(self) -> None:
        columns = self.toolbar.columns
        for i, cell in enumerate(self.cells):
            self.grid_layout.addWidget(cell, i // columns, i % columns)
        for column in range(3):
            self.grid_layout.setColumnStretch(column, 1 if column < columns else 0)

    def _label_x(self, text: str) -> None:
        """The x axis named under the bottom row only: the grid's rows share it."""
        columns = self.toolbar.columns
        last_row = (len(self.cells) - 1) // columns
        for i, cell in enumerate(self.cells):
            cell.view.getPlotItem().setLabel("bottom", text if i // columns == last_row else None)

    def _park_hidden(self) -> None:
        """Panels scrolled out of sight skip the work of each pan until they are seen again."""
        seen = QRect(0, self.scroll.verticalScrollBar().value(), self.grid.width(),
                     self.scroll.viewport().height())
        for cell in self.cells:
            cell.plot.park(not cell.geometry().intersects(seen))

    def _unpark_all(self) -> None:
        for cell in self.cells:
            cell.plot.park(False)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        QTimer.singleShot(0, self, self._park_hidden)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.notes.hide()
        self.legend.show_spec(None)
        self.stack.setCurrentWidget(self.message)

    def _x_range(self) -> tuple[float, float] | None:
        if not self.cells:
            return None
        plot = self.cells[0].plot
        low, high = plot.plot.vb.viewRange()[0]
        return plot.data_x(low), plot.data_x(high)

    # ---- The panel's menu

    def _panel_menu(self, cell: PlotCell, at: QPointF) -> None:
        menu = self.panel_menu(cell)
        menu.exec(at.toPoint())

    def panel_menu(self, cell: PlotCell) -> QMenu:
        """Reset, log y, outlier clipping, export and hide, for one panel."""
        menu = QMenu(self)
        menu.addAction("Reset view\tDouble-click", cell.reset)
        for option, text in (("log_y", "Log scale (y)"), ("clip", "Clip outliers (y range)")):
            action = menu.addAction(text)
            action.setCheckable(True)
            action.setChecked(cell.metric_name in self._settings.panel_option(option))
            action.toggled.connect(lambda on, o=option, c=cell: self._set_option(c, o, on))
        menu.addSeparator()
        export = menu.addMenu("Export panel")
        for suffix, (text, _kind) in EXPORTS.items():
            export.addAction(text, lambda s=suffix, m=cell.metric_name: self.export_dialog(s, m))
        menu.addSeparator()
        menu.addAction("Hide panel", lambda: self.set_metrics(
            [m for m in self.metrics() if m != cell.metric_name]))
        return menu

    def _set_option(self, cell: PlotCell, option: str, on: bool) -> None:
        self._settings.set_panel_option(option, cell.metric_name, on)
        cell.plot.set_options(cell.metric_name in self._settings.panel_option("log_y"),
                              cell.metric_name in self._settings.panel_option("clip"))

    # ---- Data

    def _shown_runs(self) -> list[PlottedRun]:
        return [self._data[i] for i in self._services.selected if i in self._data]

    def _offer_axes(self) -> None:
        """The x axes these runs can be placed on, their growing metrics included."""
        self.toolbar.offer_axes(plot_axes.choices(self._shown_runs()))

    def _on_selection(self, run_ids: list[int]) -> None:
        self._data = {i: run for i, run in self._data.items() if i in run_ids}
        missing = [i for i in run_ids if i not in self._data]
        if missing:
            self._services.load_plot_data(missing, None, self.add_data)
        self._offer_axes()
        self.rebuild()

    def add_data(self, runs: list[PlottedRun]) -> None:
        """Take loaded series of selected runs into the cache and redraw (in place if they grew)."""
        selected = set(self._services.selected)
        fresh = {run.run_id: run for run in runs if run.run_id in selected}
        grown = set(fresh) & set(self._data)
        self._data.update(fresh)
        if fresh.keys() - grown:
            self._offer_axes()
        if not (fresh and grown == set(fresh) and self._extend(grown)):
            self.rebuild()

    def _extend(self, run_ids: set[int]) -> bool:
        """Give the drawn curves of ``run_ids`` their new points, when nothing else changed."""
        runs, metrics = self._shown_runs(), self.metrics()
        if self.spec is None or not runs or not metrics or self.groups.active:
            return False
        spec = self._build(runs, metrics)
        if (not self._same_layout(spec)
                or (spec.x_label, spec.notes) != (self.spec.x_label, self.spec.notes)):
            return False
        if not all(cell.plot.extend(panel, run_ids)
                   for panel, cell in zip(spec.panels, self.cells, strict=True)):
            return False  # rebuild() draws every panel again
        self.spec = spec
        return True

    def _on_checkpoints_changed(self, run_id: int) -> None:
        self._reload([run_id])

    def _reload(self, run_ids: list[int]) -> None:
        """Load again the shown runs among ``run_ids`` (their checkpoints or findings changed)."""
        shown = [i for i in run_ids if i in self._data]
        if shown:
            self._services.load_plot_data(shown, None, self.add_data)

    def _on_runs_changed(self) -> None:
        """Reload the selected runs whose series, names or colours changed."""
        current = self._services.runs(list(self._data))
        stale = [r.id for r in current if self._data[r.id].version != series_version(r)]
        if stale:
            self._services.load_plot_data(stale, None, self.add_data)

    # ---- Toolbar

    def _fill_metrics_menu(self) -> None:
        menu = self.toolbar.metrics_menu
        menu.clear()
        shown = self.metrics()
        available = plot_data.with_families(m for run in self._shown_runs() for m in run.series)
        for metric in sorted(available):
            action = menu.addAction(plot_data.title(metric))
            action.setCheckable(True)
            action.setChecked(metric in shown)
            action.toggled.connect(lambda on, m=metric: self._toggle_metric(m, on))
        menu.addSeparator()
        menu.addAction("Default panels", lambda: self.set_metrics([]))

    def _toggle_metric(self, metric: str, on: bool) -> None:
        shown = [m for m in self.metrics() if m != metric]
        self.set_metrics(shown + [metric] if on else shown)

    def _on_toolbar(self, what: str) -> None:
        if what == "columns":
            self._place_cells()
            if self.spec is not None:
                self._label_x(self.spec.x_label)
        elif what == "smoothing":
            self._redraw.start()
        else:
            self.rebuild()

    def export_dialog(self, suffix: str = ".png", metric: str | None = None) -> None:
        """Ask where to save, then export in the format the chosen name says."""
        from desktop import dialogs

        name = f"headroom-{metric.replace('/*', '-per-gpu') if metric else 'plots'}{suffix}"
        path = dialogs.save_path(self, self._settings, "export", "Export plots", name,
                                 [kind for _text, kind in EXPORTS.values()],
                                 EXPORTS[suffix][1], list(EXPORTS))
        if path is not None:
            self.export(path, metric)
            self._services.sig_message.emit(f"Saved {path}")

    # ---- Hover

    def _on_mouse(self, cell: PlotCell, pos: QPointF) -> None:
        if self.spec is None or cell.plot.panel is None:
            return
        box = cell.plot.plot.vb
        if not box.sceneBoundingRect().contains(pos):
            self._hide_hover()
            return
        x = cell.plot.data_x(box.mapSceneToView(pos).x())
        for each in self.cells:
            each.plot.show_cursor(x)
            if each is not cell:
                each.hide_readout()
        cell.show_readout(x, plot_data.x_text(self.spec, x), pos)

    def _hide_hover(self) -> None:
        for cell in self.cells:
            cell.plot.hide_hover()
            cell.hide_readout()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Leave:
            self._hide_hover()
        return super().eventFilter(watched, event)
