"""Wizard page 4: memory per GPU against each candidate GPU, history's verdict, and plans.

The chart and the figures are recomputed on the GUI thread on every what-if
slider move (a few estimates: milliseconds); plans come from the planner in
the pool, started again shortly after the sliders rest. The calibration fit
comes from the services' cache; a newer one redraws the page when it lands.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.gpus import catalog
from core.models import ModelError, parse_count
from core.planner import Plan
from core.sizing import Sizer
from desktop.presenters import memory_bars
from desktop.presenters.calibration_view import Summary
from desktop.presenters.formatting import compact
from desktop.presenters.sizing_form import BATCHES, SEQUENCES, Draft, stops
from desktop.presenters.sizing_report import (
    Outcome,
    blocks,
    figures_html,
    html_page,
    markdown,
    plan_headers,
    plan_rows,
    text,
)
from desktop.sizing_services import SizingServices
from desktop.views.sizing import export_menu
from desktop.views.sizing.memory_chart import MemoryChart
from desktop.views.sizing.page import DraftPage, hint_label

REPLAN_MS = 350  # plans follow the sliders once they rest this long
FIGURES_WIDTH = 380


class ResultPage(DraftPage):
    sig_open_run = Signal(int)
    """A past run the calibrated figure leaned on was clicked."""

    def __init__(self, draft: Draft, sizing: SizingServices) -> None:
        super().__init__(draft, "Result", "Memory per GPU, what your runs say, and layouts "
                                          "that fit")
        self._sizing = sizing
        self.summary: Summary | None = None
        self.sizer: Sizer | None = None
        self.candidates: list[memory_bars.Candidate] = []
        self.bars: list[memory_bars.Bar] = []
        self.plans: list[Plan] = []
        self.planning = False
        self._generation = 0
        self.figures = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText,
                              objectName="figures")
        self.figures.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.figures.setFixedWidth(FIGURES_WIDTH)
        self.figures.linkActivated.connect(self._open_link)
        self.chart = MemoryChart()
        self.batch = StopSlider()
        self.seq = StopSlider()
        self.batch_label, self.seq_label = QLabel(), QLabel()
        self.tokens = QLineEdit(compact(draft.tokens), maximumWidth=90)
        self.plan_status = hint_label()
        self.plans_table = _plans_table(plan_headers(draft.tokens))
        self.status = hint_label()
        export_menu.attach(self.plans_table, lambda: self.plans, lambda: self.draft.spec,
                           self.status.setText)
        self._replan = QTimer(self, singleShot=True, interval=REPLAN_MS)
        self._layout()
        self._connect()

    def _layout(self) -> None:
        top = QWidget()
        row = QHBoxLayout(top)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.figures)
        right = QVBoxLayout()
        right.addWidget(self.chart, 1)
        right.addLayout(self._sliders())
        row.addLayout(right, 1)
        bottom = QWidget()
        plans = QVBoxLayout(bottom)
        plans.setContentsMargins(0, 0, 0, 0)
        header = QHBoxLayout()
        header.addWidget(QLabel("<b>Plans that fit</b>, best first. Tokens to train:"))
        header.addWidget(self.tokens)
        header.addWidget(self.plan_status, 1)
        plans.addLayout(header)
        plans.addWidget(self.plans_table, 1)
        split = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setSizes([470, 230])
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        self.export_button = QPushButton("Export Report…")
        self.copy_button = QPushButton("Copy as Text")
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addLayout(buttons)

    def _sliders(self) -> QGridLayout:
        grid = QGridLayout()
        grid.addWidget(QLabel("What if, micro batch:"), 0, 0)
        grid.addWidget(self.batch, 0, 1)
        grid.addWidget(self.batch_label, 0, 2)
        grid.addWidget(QLabel("sequence length:"), 1, 0)
        grid.addWidget(self.seq, 1, 1)
        grid.addWidget(self.seq_label, 1, 2)
        grid.setColumnStretch(1, 1)
        grid.setColumnMinimumWidth(2, 64)
        return grid

    def _connect(self) -> None:
        self.batch.valueChanged.connect(self._on_slider)
        self.seq.valueChanged.connect(self._on_slider)
        self._replan.timeout.connect(self._start_plans)
        self.tokens.editingFinished.connect(self._on_tokens)
        self.export_button.clicked.connect(self._export_dialog)
        self.copy_button.clicked.connect(self.copy_text)
        self._sizing.sig_calibration_changed.connect(self._on_calibration)

    # ---- Showing a result

    def initializePage(self) -> None:
        self.summary = self._sizing.calibration()
        self._set_stops()
        self._rebuild()

    def _rebuild(self) -> None:
        """A new sizer (new choices or a new fit): redraw, then plan again."""
        d = self.draft
        self.sizer = Sizer(d.spec, self.summary.calibration if self.summary else None, d.margin)
        self.plans = []
        self.candidates = memory_bars.candidates(d.setup(), d.chosen_gpus(), None, d.recommend)
        self._fill_plans()
        self.update_chart()
        self._start_plans()

    def update_chart(self) -> None:
        """The fast path: bars and figures for the current what-if values."""
        self.bars = memory_bars.bars(self.sizer, self.candidates, self.draft.micro_batch,
                                     self.draft.seq_len)
        self.chart.show_bars(self.bars)
        self.figures.setText(figures_html(self.outcome()) or
                             "<p>Headroom is looking for GPUs and layouts that fit…</p>")

    def outcome(self) -> Outcome:
        primary = self.bars[0].check if self.bars else None
        found = primary.calibrated if primary else None
        group = self.summary.group(found.group) if self.summary and found else None
        reason = self.sizer.uncalibrated(self.draft.setup()) if self.sizer else ""
        return Outcome(self.draft, self.bars, primary, reason, group, self.plans,
                       self.summary.names if self.summary else {})

    # ---- What-if sliders

    def _set_stops(self) -> None:
        self.batch.set_stops(stops(BATCHES, self.draft.micro_batch), self.draft.micro_batch)
        self.seq.set_stops(stops(SEQUENCES, self.draft.seq_len), self.draft.seq_len)
        self._label_sliders()

    def _on_slider(self) -> None:
        self.draft.micro_batch = self.batch.current()
        self.draft.seq_len = self.seq.current()
        self._label_sliders()
        self.update_chart()
        self._replan.start()

    def _label_sliders(self) -> None:
        self.batch_label.setText(f"{self.draft.micro_batch:,}")
        self.seq_label.setText(f"{self.draft.seq_len:,}")

    # ---- Plans

    def _start_plans(self) -> None:
        self._generation += 1
        generation, d = self._generation, self.draft
        gpus = list(catalog().values()) if d.recommend else d.chosen_gpus()
        self.planning = True
        self.plan_status.setText("Planning…")
        self._sizing.plan(self.sizer, d.setup(), gpus, max(d.max_gpus, d.n_gpus),
                          lambda plans: self._on_plans(generation, plans),
                          lambda message: self._on_plans(generation, [], message))

    def _on_plans(self, generation: int, plans: list[Plan], error: str = "") -> None:
        if generation != self._generation:
            return  # the sliders moved on: a newer plan is coming
        self.planning = False
        self.plans = plans
        d = self.draft
        if d.recommend:
            self.candidates = memory_bars.candidates(d.setup(), list(catalog().values()),
                                                     plans, True)
            self.update_chart()
        self._fill_plans()
        budget = max(d.max_gpus, d.n_gpus)
        self.plan_status.setText(error or (f"{len(plans)} layouts fit within {budget} GPUs"
                                           if plans else f"No layout of up to {budget} GPUs "
                                           f"fits with a {d.margin:.0%} margin"))

    def _fill_plans(self) -> None:
        self.plans_table.clear()
        for column, header in enumerate(plan_headers(self.draft.tokens)):
            self.plans_table.headerItem().setText(column, header)
        for row in plan_rows(self.plans, self.draft.tokens):
            item = QTreeWidgetItem(list(row))
            item.setToolTip(len(row) - 1, row[-1])
            item.setToolTip(3, row[3])
            self.plans_table.addTopLevelItem(item)

    def _on_tokens(self) -> None:
        try:
            self.draft.tokens = parse_count(self.tokens.text())
        except ModelError:
            self.status.setText(f"Tokens to train: {self.tokens.text()!r} is not a count "
                                "(try 10B or 2e9)")
            return
        self.status.setText("")
        self._fill_plans()

    # ---- Calibration, links, report

    def _on_calibration(self, summary: Summary) -> None:
        self.summary = summary
        if self.wizard() is not None and self.wizard().currentPage() is self:
            self._rebuild()

    def _open_link(self, link: str) -> None:
        if link.startswith("run:"):
            self.sig_open_run.emit(int(link.removeprefix("run:")))

    def export(self, path: Path) -> None:
        """Write the report: HTML with the chart inside, or Markdown with a PNG beside it."""
        report = blocks(self.outcome())
        if path.suffix.lower() in (".html", ".htm"):
            path.write_text(html_page(report, self.chart.png()), encoding="utf-8")
            return
        image = path.with_name(f"{path.stem}-chart.png")
        image.write_bytes(self.chart.png())
        path.write_text(markdown(report, image.name), encoding="utf-8")

    def copy_text(self) -> None:
        QGuiApplication.clipboard().setText(text(blocks(self.outcome())))
        self.status.setText("Copied the report as text")

    def _export_dialog(self) -> None:
        name, chosen = QFileDialog.getSaveFileName(
            self, "Export the sizing report", str(Path.home() / "sizing-report.md"),
            "Markdown with a PNG chart (*.md);;HTML, one file (*.html)")
        if not name:
            return
        path = Path(name)
        if not path.suffix:
            path = path.with_suffix(".html" if "HTML" in chosen else ".md")
        try:
            self.export(path)
        except OSError as err:
            self.status.setText(f"Could not write {path}: {err.strerror or err}")
            return
        self.status.setText(f"Saved {path}")


class StopSlider(QSlider):
    """A slider over a list of values: common micro batches or sequence lengths."""

    def __init__(self) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.setPageStep(1)
        self.stops: list[int] = [1]

    def set_stops(self, values: list[int], current: int) -> None:
        self.blockSignals(True)
        self.stops = values
        self.setMaximum(len(values) - 1)
        self.setValue(values.index(current))
        self.blockSignals(False)

    def current(self) -> int:
        return self.stops[self.value()]

    def set_current(self, value: int) -> None:
        """Move to ``value`` (one of the stops), as a user's drag would."""
        self.setValue(self.stops.index(value))


def _plans_table(headers: tuple[str, ...]) -> QTreeWidget:
    table = QTreeWidget(rootIsDecorated=False, alternatingRowColors=True, wordWrap=True)
    table.setHeaderLabels(list(headers))
    widths = (26, 84, 160, 300, 104, 70, 88, 64, 96)
    for column, width in enumerate(widths):
        table.setColumnWidth(column, width)
    return table
