"""The Scatter tab: every run as a point on two chosen fields, coloured by a third, with the memory
model drawn over it; or the same runs as parallel coordinates, whose brushing filters the runs table.

A click on a point selects its run. What is placed where is computed by
:mod:`desktop.presenters.scatter` and :mod:`desktop.presenters.parallel`;
the runs (with their config and stated summary, for ``config.*`` and GPU
hours) load in the background, and the calibration comes from the sizing
services, fitted there once for the wizard and the Calibration tab too.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.query import QueryError
from desktop.compare_services import CompareServices
from desktop.presenters import parallel, scatter
from desktop.presenters.plot_data import PALETTE
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.sizing_services import SizingServices

SELECT_RUNS = "Ingest runs to compare their results."
BRUSH_DELAY_MS = 250
DEFAULTS = ("seq_len", "peak_gib", "method")
MISSING_COLOUR = "#9aa5b1"


class ScatterPanel(QWidget):
    def __init__(self, services: AppServices, settings: Settings, compare: CompareServices,
                 sizing: SizingServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._services = services
        self._compare, self._sizing = compare, sizing
        self._runs: list = []
        self._extras: dict[int, dict] = {}
        self._stale = True
        self._sent = ""  # the last filter brushing put in the runs panel
        self._fields: list[str] = list(parallel.DEFAULT_FIELDS)
        self._scatter_view = None  # made on first use (pyqtgraph loads then)
        self._parallel_view = None
        self._brush_timer = QTimer(self, singleShot=True, interval=BRUSH_DELAY_MS)
        self._brush_timer.timeout.connect(self._send_filter)
        self._make_bar()
        self.stack = QStackedWidget()
        self.note = QLabel(SELECT_RUNS, wordWrap=True)
        self.note.setStyleSheet("color: #52606d;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(self.bar)
        layout.addWidget(self.note)
        layout.addWidget(self.stack, 1)
        services.sig_runs_changed.connect(self._on_runs_changed)
        # bound methods, not lambdas: Qt drops them with the panel (the services outlive it)
        services.sig_selection_changed.connect(self._refresh_on)
        self._sizing.sig_calibration_changed.connect(self._refresh_on)

    def _refresh_on(self, *_news: object) -> None:
        self.refresh()

    # ---- Building

    def _make_bar(self) -> None:
        self.modes = QButtonGroup(self)
        self.scatter_button = QToolButton(text="Scatter", checkable=True, checked=True)
        self.parallel_button = QToolButton(text="Parallel", checkable=True)
        self.parallel_button.setToolTip("Parallel coordinates: drag along an axis to brush")
        for i, button in enumerate((self.scatter_button, self.parallel_button)):
            self.modes.addButton(button, i)
        self.modes.idToggled.connect(lambda _i, on: on and self.refresh())
        self.x_combo, self.y_combo, self.colour_combo = (_combo(d) for d in DEFAULTS)
        self.log_x = QCheckBox("Log x")
        self.log_y = QCheckBox("Log y")
        for widget in (self.x_combo, self.y_combo, self.colour_combo):
            widget.currentTextChanged.connect(lambda _t: self.refresh())
        for check in (self.log_x, self.log_y):
            check.toggled.connect(self._apply_log)
        self.fields_button = QToolButton(text="Fields",
                                         popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        self.fields_button.setMenu(QMenu(self.fields_button))
        self.fields_button.menu().aboutToShow.connect(self._fill_fields)
        self.clear_button = QToolButton(text="Clear Brushes")
        self.clear_button.clicked.connect(lambda: self.parallel_view.clear_brushes())
        self.bar = QVBoxLayout()
        modes, axes = QHBoxLayout(), QHBoxLayout()
        for widget in (self.scatter_button, self.parallel_button):
            modes.addWidget(widget)
        modes.addStretch(1)
        modes.addWidget(self.fields_button)
        modes.addWidget(self.clear_button)
        self.scatter_controls = [QLabel("x"), self.x_combo, QLabel("y"), self.y_combo,
                                 QLabel("colour"), self.colour_combo, self.log_x, self.log_y]
        for widget in self.scatter_controls:
            axes.addWidget(widget)
        axes.addStretch(1)
        self.bar.addLayout(modes)
        self.bar.addLayout(axes)
        self.fields_button.hide()
        self.clear_button.hide()

    @property
    def scatter_view(self):
        if self._scatter_view is None:
            from desktop.views.scatter_plot import ScatterPlot

            self._scatter_view = ScatterPlot(self)
            self._scatter_view.sig_clicked.connect(lambda run_id: self._compare.select([run_id]))
            self.stack.addWidget(self._scatter_view.widget)
        return self._scatter_view

    @property
    def parallel_view(self):
        if self._parallel_view is None:
            from desktop.views.parallel_plot import ParallelPlot

            self._parallel_view = ParallelPlot(self)
            self._parallel_view.sig_brushed.connect(lambda _b: self._brush_timer.start())
            self.stack.addWidget(self._parallel_view.widget)
        return self._parallel_view

    # ---- Data

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self._load()

    def _on_runs_changed(self) -> None:
        self._stale = True
        if self.isVisible():
            self._load()

    def _load(self) -> None:
        self._stale = False
        extras = self._services.extras
        self._services.load_runs(self._on_loaded,
                                 prepare=lambda runs: (runs, extras([r.id for r in runs])))

    def _on_loaded(self, loaded) -> None:
        self._runs, self._extras = loaded
        self._refill_choices()
        self.refresh()

    def _refill_choices(self) -> None:
        axes = scatter.axis_choices(self._runs)
        for combo, choices in ((self.x_combo, axes), (self.y_combo, axes),
                               (self.colour_combo, scatter.colour_choices(self._runs))):
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(choices)
            combo.setEditText(text)
            combo.blockSignals(False)

    # ---- Showing

    def refresh(self) -> None:
        if not self.isVisible() or not self._runs:
            self.note.setText(SELECT_RUNS if not self._runs else self.note.text())
            return
        parallel_mode = self.parallel_button.isChecked()
        for widget in self.scatter_controls:
            widget.setVisible(not parallel_mode)
        self.fields_button.setVisible(parallel_mode)
        self.clear_button.setVisible(parallel_mode)
        if parallel_mode:
            self._show_parallel()
        else:
            self._show_scatter()

    def _show_scatter(self) -> None:
        x, y, c = (combo.currentText().strip() for combo in
                   (self.x_combo, self.y_combo, self.colour_combo))
        try:
            found = scatter.scatter(self._runs, x, y, c, self._services.selected, self._extras,
                                    self._calibration(x, y))
        except QueryError as err:
            self.note.setText(f"Cannot plot that: {err}")
            return
        self.stack.setCurrentWidget(self.scatter_view.widget)
        colours, key = _colours(found)
        self.scatter_view.draw(found, colours, key)
        self._apply_log()
        self.note.setText(_scatter_note(found))

    def _calibration(self, x: str, y: str):
        """The user's fit, when a model curve will be drawn (asking starts one if needed)."""
        if x not in scatter.KNOBS or y not in scatter.PEAKS:
            return None
        summary = self._sizing.calibration()
        return summary.calibration if summary is not None else None

    def _show_parallel(self) -> None:
        axes = parallel.axes_for(self._runs, self._fields, self._extras)
        lines = parallel.lines(self._runs, axes, self._extras)
        self.stack.setCurrentWidget(self.parallel_view.widget)
        self.parallel_view.draw(lines, list(self._services.selected))
        self.note.setText(f"{len(lines.run_ids)} runs on {len(axes)} axes. Drag along an axis "
                          "to brush a range: the runs table keeps the runs inside every brush.")

    def _apply_log(self) -> None:
        if self._scatter_view is not None:
            self._scatter_view.plot.setLogMode(x=self.log_x.isChecked(), y=self.log_y.isChecked())

    def _fill_fields(self) -> None:
        menu = self.fields_button.menu()
        menu.clear()
        choices = dict.fromkeys([*parallel.DEFAULT_FIELDS, *scatter.colour_choices(self._runs)[1:]])
        for name in choices:
            action = menu.addAction(name)
            action.setCheckable(True)
            action.setChecked(name in self._fields)
            action.toggled.connect(lambda on, n=name: self._toggle_field(n, on))

    def _toggle_field(self, name: str, on: bool) -> None:
        self._fields = [f for f in self._fields if f != name] + ([name] if on else [])
        self.refresh()

    def _send_filter(self) -> None:
        """The brushes as the runs table's filter (cleared when the brushes are)."""
        view = self.parallel_view
        query = parallel.brush_query(view.lines.axes, list(view.brushes.values())) \
            if view.lines else ""
        if query or self._sent:
            self._sent = query
            self._compare.filter(query)


def _combo(default: str) -> QComboBox:
    combo = QComboBox(editable=True)
    combo.setMinimumContentsLength(6)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    combo.setEditText(default)
    combo.setToolTip("Any field a query takes: shape fields, loss.last, peak_gib, config.KEY")
    return combo


def _colours(found: scatter.Scatter) -> tuple[list[str], dict[str, str]]:
    """Each point's colour (by category for text, light to dark for numbers), and the key."""
    values = [p.colour_value for p in found.points]
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        low, high = min(present), max(present)
        ramp = [_ramp(None if v is None else (v - low) / ((high - low) or 1)) for v in values]
        return ramp, {f"{found.colour} {low:.4g}": _ramp(0.0),
                      f"{found.colour} {high:.4g}": _ramp(1.0)}
    categories = list(dict.fromkeys(str(v) for v in present))[:len(PALETTE)]
    key = {c: PALETTE[i] for i, c in enumerate(categories)}
    return [key.get(str(v), MISSING_COLOUR) for v in values], key


def _ramp(t: float | None) -> str:
    """Light blue to dark blue (grey for a missing value)."""
    if t is None:
        return MISSING_COLOUR
    start, end = (198, 219, 239), (8, 48, 107)
    r, g, b = (round(s + (e - s) * t) for s, e in zip(start, end, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _scatter_note(found: scatter.Scatter) -> str:
    text = f"{len(found.points)} runs have both {found.x} and {found.y}."
    model = found.model
    if model is not None:
        leads = ("the calibrated figure leads: " if model.lead == "calibrated"
                 else "the analytical figure leads; calibrated: ")
        text += f" Memory model for {model.run_name} ({model.counter}): {leads}{model.why}."
    elif found.note:
        text += f" {found.note}"
    return text
