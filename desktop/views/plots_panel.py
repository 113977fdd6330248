"""The plots panel: stacked metric panels with a shared x axis, for the selected runs.

The toolbar chooses metrics, the x axis, smoothing and log-y (all remembered);
series load in the background, and the panel redraws from what it has cached,
smoothing each curve once. Export writes the panels as PNG or SVG, or the shown
points as CSV. The pyqtgraph canvas is made when there is first something to
plot, so the window paints before pyqtgraph is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSlider,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.smoothing import MAX_WEIGHT
from desktop.presenters import plot_data
from desktop.presenters.plot_data import X_AXES, PlotSpec, RunData
from desktop.presenters.plot_marks import Focus
from desktop.services import AppServices, series_version
from desktop.settings import Settings
from desktop.views import plot_focus, scene_export
from desktop.views.group_plot import GroupPlot

if TYPE_CHECKING:
    from desktop.views.metric_plot import MetricPlot
    from desktop.views.plotting import pg

MIN_PANEL_HEIGHT = 110
SELECT_RUNS = "Select runs in the table to plot them (Ctrl+click or Shift+click for several)."
NO_METRICS = "The selected runs have no metric series to plot."
EXPORTS = {  # suffix -> (menu text, file dialog filter)
    ".png": ("Image (PNG)…", "PNG image (*.png)"),
    ".svg": ("Vector image (SVG)…", "SVG image (*.svg)"),
    ".csv": ("Shown points (CSV)…", "CSV table (*.csv)"),
}


LEGEND_CHARS = 44
_INSTANT = QToolButton.ToolButtonPopupMode.InstantPopup


def _elide(name: str) -> str:
    return name if len(name) <= LEGEND_CHARS else name[: LEGEND_CHARS - 1] + "…"


class PlotsPanel(QWidget):
    def __init__(self, services: AppServices, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services, self._settings = services, settings
        self._data: dict[int, RunData] = {}
        self._drawn_axis = ""
        self.spec: PlotSpec | None = None
        self.panels: list[MetricPlot] = []
        self._graphics: pg.GraphicsLayoutWidget | None = None
        self._smoothed = plot_data.SmoothingCache()
        self._focus: Focus | None = None  # the finding selected in the findings list
        self._zoom_pending = False  # zoom to it once its run is drawn
        self._redraw = QTimer(self, singleShot=True, interval=120)
        self._redraw.timeout.connect(self.rebuild)
        self.groups = GroupPlot(services, settings, self.rebuild, self)  # bands of run groups
        self._make_toolbar()
        self._make_plots()
        self._layout()
        services.sig_selection_changed.connect(self._on_selection)
        services.sig_runs_changed.connect(self._on_runs_changed)
        services.sig_checkpoints_changed.connect(lambda run_id: self._reload([run_id]))
        services.sig_findings_changed.connect(self._reload)
        services.sig_focus_requested.connect(self.focus)

    # ---- Building the widget

    def _make_toolbar(self) -> None:
        self.metrics_button = QToolButton(text="Metrics", popupMode=_INSTANT)
        self.metrics_menu = QMenu(self)
        self.metrics_menu.aboutToShow.connect(self._fill_metrics_menu)
        self.metrics_button.setMenu(self.metrics_menu)
        self.axis_combo = QComboBox()
        for key, label in X_AXES.items():
            self.axis_combo.addItem(label, key)
        self.axis_combo.setCurrentIndex(max(self.axis_combo.findData(self._settings.x_axis), 0))
        self.axis_combo.currentIndexChanged.connect(self._on_axis)
        self.smooth_slider = QSlider(Qt.Orientation.Horizontal, minimum=0,
                                     maximum=round(MAX_WEIGHT * 1000), maximumWidth=160)
        self.smooth_slider.setValue(round(self._settings.smoothing * 1000))
        self.smooth_label = QLabel(minimumWidth=36)
        self.smooth_slider.valueChanged.connect(self._on_smoothing)
        self.log_check = QCheckBox("Log y", checked=self._settings.log_y)
        self.log_check.toggled.connect(self._on_log)
        self.export_button = QToolButton(text="Export", popupMode=_INSTANT)
        menu = QMenu(self)
        for suffix, (text, _kind) in EXPORTS.items():
            menu.addAction(text, lambda s=suffix: self.export_dialog(s))
        self.export_button.setMenu(menu)
        self._show_smoothing()

    def _make_plots(self) -> None:
        self.scroll = QScrollArea(widgetResizable=True, frameShape=QScrollArea.Shape.NoFrame)
        self.message = QLabel(SELECT_RUNS, alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.message.setStyleSheet("color: #616e7c; font-size: 13px;")
        self.notes = QLabel(wordWrap=True)
        self.notes.setStyleSheet("color: #8d6e00;")
        self.notes.hide()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.scroll)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.metrics_button)
        bar.addWidget(QLabel("X axis"))
        bar.addWidget(self.axis_combo)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Smoothing"))
        bar.addWidget(self.smooth_slider)
        bar.addWidget(self.smooth_label)
        bar.addWidget(self.log_check)
        bar.addWidget(self.groups.bar)
        bar.addStretch(1)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.notes)
        layout.addWidget(self.stack, 1)

    @property
    def graphics(self) -> pg.GraphicsLayoutWidget:
        """The canvas holding the stacked plots and their legend (made on first use)."""
        if self._graphics is None:
            self._graphics = self._make_canvas()
        return self._graphics

    def _make_canvas(self) -> pg.GraphicsLayoutWidget:
        from desktop.views.plotting import pg

        canvas = pg.GraphicsLayoutWidget()
        canvas.setAcceptDrops(False)  # drops go to the window, which ingests them
        canvas.ci.setSpacing(2)
        canvas.viewport().installEventFilter(self)
        self._hover = pg.SignalProxy(canvas.scene().sigMouseMoved, rateLimit=60,
                                     slot=self._on_mouse)
        self.legend = pg.LegendItem(colCount=4, labelTextSize="9pt", verSpacing=-4)
        self.scroll.setWidget(canvas)
        bar = self.scroll.verticalScrollBar()
        bar.valueChanged.connect(self._park_hidden)
        bar.rangeChanged.connect(self._park_hidden)
        return canvas

    # ---- Public API

    @property
    def smoothing(self) -> float:
        return self.smooth_slider.value() / 1000

    @property
    def axis(self) -> str:
        return self.axis_combo.currentData()

    def metrics(self) -> list[str]:
        """The panels shown now (the user's choice where the runs have it, else the defaults)."""
        available = {m for run in self._shown_runs() for m in run.series}
        return plot_data.choose_metrics(available, self._settings.metrics)

    def set_metrics(self, metrics: list[str]) -> None:
        """Show these panels (empty list: back to the defaults) and remember the choice."""
        self._settings.metrics = metrics
        self.rebuild()

    def rebuild(self) -> None:
        """Recompute every curve from the cached series and redraw."""
        runs = self._shown_runs()
        metrics = self.metrics()
        if not runs or not metrics:
            self.spec = None
            self._show_message(SELECT_RUNS if not runs else NO_METRICS)
            return
        self.spec = self.groups.apply(
            plot_data.build(runs, metrics, self.axis, self.smoothing, self._smoothed))
        self.draw(self.spec)

    def export(self, path: Path) -> None:
        """Write the plots to ``path``: PNG or SVG image, or CSV of the points in view."""
        if path.suffix.lower() != ".csv":
            scene_export.save(self.graphics.ci, path)
            return
        with path.open("w", newline="", encoding="utf-8") as out:
            plot_data.write_csv(out, self.spec or PlotSpec([], "step", "step"), self._x_range())

    # ---- Drawing

    def draw(self, spec: PlotSpec) -> None:
        """Show prepared curves (:meth:`rebuild` prepares them from the cached series)."""
        if not self._same_layout(spec):
            self._new_panels(len(spec.panels))
        for i, (panel, plot) in enumerate(zip(spec.panels, self.panels, strict=True)):
            plot.draw(panel, self.log_check.isChecked(), label_resumes=i == 0)
        self._label_axes(spec)
        self._fill_legend()
        self.groups.draw(self.panels, self.legend)
        self.notes.setText("Not shown — " + "; ".join(spec.notes) if spec.notes else "")
        self.notes.setVisible(bool(spec.notes))
        self.stack.setCurrentWidget(self.scroll)
        self._park_hidden()
        self._show_focus(spec)

    def focus(self, focus: Focus | None) -> None:
        """Highlight a finding and zoom to its steps (adding its metric's panel if hidden)."""
        if focus is None and self._focus is not None:
            plot_focus.unzoom(self.panels)
        self._focus, self._zoom_pending = focus, focus is not None
        available = {m for run in self._shown_runs() for m in run.series}
        shown = self.metrics()
        if focus is not None and focus.metric in available and focus.metric not in shown:
            self.set_metrics(shown + [focus.metric])  # redraws, and zooms when drawn
        elif self.spec is not None:
            self._show_focus(self.spec)

    def _show_focus(self, spec: PlotSpec) -> None:
        plot_focus.highlight(self.panels, self._focus)
        if self._zoom_pending and self._focus is not None:
            self._zoom_pending = not plot_focus.zoom(self.panels, spec, self._focus,
                                                     self.log_check.isChecked())

    def _same_layout(self, spec: PlotSpec) -> bool:
        return (len(self.panels) == len(spec.panels)
                and all(p.panel is not None and p.panel.metric == s.metric
                        for p, s in zip(self.panels, spec.panels, strict=True))
                and self._drawn_axis == spec.axis)

    def _new_panels(self, count: int) -> None:
        from desktop.views.metric_plot import CompactAxis, MetricPlot
        from desktop.views.plotting import pg

        self.graphics.clear()
        self.graphics.addItem(self.legend, row=0, col=0)
        self.panels = []
        for row in range(count):
            axes = {"left": CompactAxis("left")}
            if self.axis == "wall":
                axes["bottom"] = pg.DateAxisItem()
            plot = self.graphics.addPlot(row=row + 1, col=0, axisItems=axes)
            plot.geometryChanged.connect(self._park_hidden)  # laid out, or the stack reflowed
            if self.panels:
                plot.setXLink(self.panels[0].plot)
            self.panels.append(MetricPlot(plot))
        self.graphics.setMinimumHeight(count * MIN_PANEL_HEIGHT + 30)
        self.graphics.updateGeometry()  # the scroll area then fits the plots to its height again
        self._drawn_axis = self.axis

    def _park_hidden(self) -> None:
        """Panels scrolled out of sight skip the work of each pan until they are seen again."""
        if self._graphics is None:
            return
        seen = QRect(0, self.scroll.verticalScrollBar().value(), self._graphics.width(),
                     self.scroll.viewport().height())
        for plot in self.panels:
            where = self._graphics.mapFromScene(plot.plot.sceneBoundingRect()).boundingRect()
            plot.park(not where.intersects(seen))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._park_hidden()

    def _label_axes(self, spec: PlotSpec) -> None:
        for i, plot in enumerate(self.panels):
            last = i == len(self.panels) - 1
            axis = plot.plot.getAxis("bottom")
            axis.setStyle(showValues=last)
            axis.setHeight(None if last else 6)
            plot.plot.setLabel("bottom", spec.x_label if last else None)

    def _fill_legend(self) -> None:
        self.legend.clear()
        names: list[str] = []
        for plot in self.panels:
            for item in plot.items:
                if item.name() not in names:
                    names.append(item.name())
                    self.legend.addItem(item, _elide(item.name()))
        widest = max((len(_elide(n)) for n in names), default=1)
        fits = self.graphics.width() // (7 * widest + 48)
        self.legend.setColumnCount(max(1, min(len(names), fits, 4)))

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.notes.hide()
        self.stack.setCurrentWidget(self.message)

    def _x_range(self) -> tuple[float, float] | None:
        if not self.panels:
            return None
        low, high = self.panels[0].plot.vb.viewRange()[0]
        return float(low), float(high)

    # ---- Data

    def _shown_runs(self) -> list[RunData]:
        return [self._data[i] for i in self._services.selected if i in self._data]

    def _on_selection(self, run_ids: list[int]) -> None:
        self._data = {i: run for i, run in self._data.items() if i in run_ids}
        missing = [i for i in run_ids if i not in self._data]
        if missing:
            self._services.load_plot_data(missing, None, self.add_data)
        self.rebuild()

    def add_data(self, runs: list[RunData]) -> None:
        """Take loaded series of selected runs into the cache and redraw (in place if they grew)."""
        selected = set(self._services.selected)
        fresh = {run.run_id: run for run in runs if run.run_id in selected}
        grown = set(fresh) & set(self._data)
        self._data.update(fresh)
        if not (fresh and grown == set(fresh) and self._extend(grown)):
            self.rebuild()

    def _extend(self, run_ids: set[int]) -> bool:
        """Give the drawn curves of ``run_ids`` their new points, when nothing else changed."""
        runs, metrics = self._shown_runs(), self.metrics()
        if self.spec is None or not runs or not metrics or self.groups.active:
            return False
        spec = plot_data.build(runs, metrics, self.axis, self.smoothing, self._smoothed)
        if (not self._same_layout(spec)
                or (spec.x_label, spec.notes) != (self.spec.x_label, self.spec.notes)):
            return False
        if not all(plot.extend(panel, run_ids)
                   for panel, plot in zip(spec.panels, self.panels, strict=True)):
            return False  # rebuild() draws every panel again
        self.spec = spec
        return True

    def _reload(self, run_ids: list[int]) -> None:
        """Load again the shown runs among ``run_ids`` (their checkpoints or findings changed)."""
        shown = [i for i in run_ids if i in self._data]
        if shown:
            self._services.load_plot_data(shown, None, self.add_data)

    def _on_runs_changed(self) -> None:
        """Reload the selected runs whose series or names changed (a log grew, a rename)."""
        current = self._services.runs(list(self._data))
        stale = [r.id for r in current if self._data[r.id].version != series_version(r)]
        if stale:
            self._services.load_plot_data(stale, None, self.add_data)

    # ---- Toolbar slots

    def _fill_metrics_menu(self) -> None:
        self.metrics_menu.clear()
        shown = self.metrics()
        available = sorted({m for run in self._shown_runs() for m in run.series})
        for metric in available:
            action = self.metrics_menu.addAction(plot_data.title(metric))
            action.setCheckable(True)
            action.setChecked(metric in shown)
            action.toggled.connect(lambda on, m=metric: self._toggle_metric(m, on))
        self.metrics_menu.addSeparator()
        self.metrics_menu.addAction("Default panels", lambda: self.set_metrics([]))

    def _toggle_metric(self, metric: str, on: bool) -> None:
        shown = [m for m in self.metrics() if m != metric]
        self.set_metrics(shown + [metric] if on else shown)

    def _on_axis(self) -> None:
        self._settings.x_axis = self.axis
        self.rebuild()

    def _on_smoothing(self) -> None:
        self._settings.smoothing = self.smoothing
        self._show_smoothing()
        self._redraw.start()

    def _show_smoothing(self) -> None:
        self.smooth_label.setText(f"{self.smoothing:.2f}" if self.smoothing else "off")

    def _on_log(self, on: bool) -> None:
        self._settings.log_y = on
        for plot in self.panels:
            plot.plot.setLogMode(x=False, y=on)

    def export_dialog(self, suffix: str = ".png") -> None:
        """Ask where to save, then export in the format the chosen name says."""
        kinds = [EXPORTS[suffix][1]] + [k for s, (_, k) in EXPORTS.items() if s != suffix]
        start = str(Path(self._settings.last_folder) / f"headroom-plots{suffix}")
        name, kind = QFileDialog.getSaveFileName(self, "Export plots", start, ";;".join(kinds))
        if not name:
            return
        path = Path(name)
        if path.suffix.lower() not in EXPORTS:
            path = path.with_suffix(next(s for s, (_, k) in EXPORTS.items() if k == kind))
        self._settings.last_folder = str(path.parent)
        self.export(path)
        self._services.sig_message.emit(f"Saved {path}")

    # ---- Hover

    def _on_mouse(self, event: tuple) -> None:
        pos = event[0]
        if self.spec is None:
            return
        for plot in self.panels:
            if plot.plot.vb.sceneBoundingRect().contains(pos):
                x = plot.plot.vb.mapSceneToView(pos).x()
                label = plot_data.x_text(self.spec, x)
                for each in self.panels:
                    each.show_hover(x, label)
                return
        self._hide_hover()

    def _hide_hover(self) -> None:
        for plot in self.panels:
            plot.hide_hover()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Leave:
            self._hide_hover()
        return super().eventFilter(watched, event)

