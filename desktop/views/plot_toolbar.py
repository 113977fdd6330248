"""The plots' toolbar: metrics, the x axis (linear or log), smoothing, groups, columns, export.

Every choice is remembered in the settings and announced by ``sig_changed`` with
what changed ("axis", "log_x", "smoothing", "columns").
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QMenu,
    QSizePolicy,
    QSlider,
    QToolBar,
    QToolButton,
    QWidget,
)

from core.smoothing import KINDS, MAX_WEIGHT, window
from desktop.presenters import plot_axes
from desktop.settings import Settings

EXPORTS = {  # suffix -> (menu text, file dialog filter)
    ".png": ("Image (PNG)…", "PNG image (*.png)"),
    ".svg": ("Vector image (SVG)…", "SVG image (*.svg)"),
    ".csv": ("Shown points (CSV)…", "CSV table (*.csv)"),
}
SLIDER_STEPS = 1000  # the slider's top is MAX_WEIGHT, 0.999
_INSTANT = QToolButton.ToolButtonPopupMode.InstantPopup


class PlotToolbar(QToolBar):
    """A tool bar: in a narrow window what does not fit goes behind its » button."""

    sig_changed = Signal(str)
    """A choice changed: "axis", "log_x", "smoothing" or "columns"."""
    sig_export = Signal(str)
    """Export the plots in this format (".png", ".svg", ".csv")."""

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        self.metrics_button = QToolButton(text="Metrics", popupMode=_INSTANT)
        self.metrics_menu = QMenu(self)
        self.metrics_button.setMenu(self.metrics_menu)
        self.axis_combo = QComboBox(toolTip="What the x axis counts: any metric that only grows")
        self.offer_axes(list(plot_axes.AXES))
        self.log_x_check = QCheckBox("Log x", checked=settings.log_x)
        self.kind_combo = QComboBox(toolTip="How curves are smoothed (the raw curve stays faint "
                                            "behind)")
        for key, text in KINDS.items():
            self.kind_combo.addItem(text, key)
        self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findData(settings.smoothing_kind)))
        self.smooth_slider = QSlider(Qt.Orientation.Horizontal, minimum=0,
                                     maximum=round(MAX_WEIGHT * SLIDER_STEPS), minimumWidth=80,
                                     maximumWidth=120)
        self.smooth_slider.setValue(round(settings.smoothing * SLIDER_STEPS))
        self.smooth_label = QLabel(minimumWidth=58)
        self.columns_combo = QComboBox(toolTip="Panels side by side")
        for count in (1, 2, 3):
            self.columns_combo.addItem(f"{count} column{'s' * (count > 1)}", count)
        self.columns_combo.setCurrentIndex(settings.columns - 1)
        self.export_button = QToolButton(text="Export", popupMode=_INSTANT)
        menu = QMenu(self)
        for suffix, (text, _kind) in EXPORTS.items():
            menu.addAction(text, lambda s=suffix: self.sig_export.emit(s))
        self.export_button.setMenu(menu)
        self._connect()
        self._layout()
        self._show_smoothing()

    def _connect(self) -> None:
        self.axis_combo.currentIndexChanged.connect(self._on_axis)
        self.log_x_check.toggled.connect(self._on_log_x)
        self.kind_combo.currentIndexChanged.connect(self._on_smoothing)
        self.smooth_slider.valueChanged.connect(self._on_smoothing)
        self.columns_combo.currentIndexChanged.connect(self._on_columns)

    def _layout(self) -> None:
        self.setMovable(False)
        for combo, chars in ((self.axis_combo, 10), (self.kind_combo, 8)):  # narrow; full popups
            combo.setMinimumContentsLength(chars)
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setStyleSheet("QToolBar { border: none; spacing: 4px; }")
        self.addWidget(self.metrics_button)
        self._after_metrics = self.addSeparator()
        for widget in (QLabel("X axis"), self.axis_combo, self.log_x_check,
                       QLabel("  Smoothing"), self.kind_combo, self.smooth_slider,
                       self.smooth_label):
            self.addWidget(widget)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.addWidget(spacer)
        self.addWidget(self.columns_combo)
        self.addWidget(self.export_button)

    def add_tool(self, widget: QWidget) -> None:
        """Another feature's control, after the metrics (the run groups' button)."""
        self.insertWidget(self._after_metrics, widget)

    # ---- What is chosen

    @property
    def axis(self) -> str:
        return self.axis_combo.currentData() or "step"

    @property
    def log_x(self) -> bool:
        return self.log_x_check.isChecked()

    @property
    def smoothing(self) -> float:
        return self.smooth_slider.value() / SLIDER_STEPS

    @property
    def smoothing_kind(self) -> str:
        return self.kind_combo.currentData()

    @property
    def columns(self) -> int:
        return self.columns_combo.currentData()

    def offer_axes(self, axes: list[str]) -> None:
        """The x axes to choose from (the runs' growing metrics change with the selection)."""
        wanted = self.axis_combo.currentData() or self._settings.x_axis
        if [self.axis_combo.itemData(i) for i in range(self.axis_combo.count())] == axes:
            return
        self.axis_combo.blockSignals(True)
        self.axis_combo.clear()
        for axis in axes:
            self.axis_combo.addItem(plot_axes.label(axis), axis)
        if wanted not in axes:
            self.axis_combo.addItem(plot_axes.label(wanted), wanted)  # kept until unselected
        self.axis_combo.setCurrentIndex(max(0, self.axis_combo.findData(wanted)))
        self.axis_combo.blockSignals(False)

    # ---- Slots

    def _on_axis(self) -> None:
        self._settings.x_axis = self.axis
        self.sig_changed.emit("axis")

    def _on_log_x(self, on: bool) -> None:
        self._settings.log_x = on
        self.sig_changed.emit("log_x")

    def _on_smoothing(self) -> None:
        self._settings.smoothing = self.smoothing
        self._settings.smoothing_kind = self.smoothing_kind
        self._show_smoothing()
        self.sig_changed.emit("smoothing")

    def _on_columns(self) -> None:
        self._settings.columns = self.columns
        self.sig_changed.emit("columns")

    def _show_smoothing(self) -> None:
        weight = self.smoothing
        if not weight:
            text = "off"
        elif self.smoothing_kind == "ema":
            text = f"{weight:.3f}".rstrip("0")
        elif self.smoothing_kind == "running":
            text = f"{window(weight)} points"
        else:
            text = f"σ {window(weight) / 2:g} points"
        self.smooth_label.setText(text)
