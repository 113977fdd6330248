"""Wizard page 4: the answer in one sentence, memory per GPU, and the plans that fit.

The headline says whether the run fits as asked and names the best plan (in
card mode: what the user's cards run). Bars rest on the figure the wizard
leads with; the other figures are markers, named in the line under the
headline. The chart and the figures are recomputed on the GUI thread on
every what-if slider move (a few estimates: milliseconds); plans come from
the planner in the pool, started again shortly after the sliders rest. The
selected plan (the best, until the user picks another) is drawn beside the
GPUs as asked, and the breakdown follows it. The calibration fit comes from
the services' cache; a newer one redraws the page when it lands.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.gpus import catalog
from core.planner import Plan
from core.sizing import CardAnswer, Sizer
from desktop import dialogs
from desktop.presenters import memory_bars, sizing_plans
from desktop.presenters.calibration_view import Summary
from desktop.presenters.sizing_form import BATCHES, SEQUENCES, Draft, stops
from desktop.presenters.sizing_report import (
    Outcome,
    blocks,
    budget_words,
    figures_html,
    html_page,
    markdown,
    text,
)
from desktop.settings import Settings
from desktop.sizing_services import SizingServices
from desktop.views.sizing import export_menu
from desktop.views.sizing.memory_chart import MemoryChart
from desktop.views.sizing.page import HINT_STYLE, DraftPage, FittedLabel, hint_label
from desktop.views.sizing.plans_table import PlansTable
from desktop.views.sizing.simulate_box import SimulateBox
from desktop.workers import Worker

REPLAN_MS = 350  # plans follow the sliders once they rest this long
FIGURES_WIDTH = 340
HEADLINE_STYLE = "font-size: 11pt; font-weight: 600; color: #1f2933;"


class ResultPage(DraftPage):
    sig_open_run = Signal(int)
    """A past run the calibrated figure leaned on was clicked."""

    def __init__(self, draft: Draft, sizing: SizingServices, settings: Settings) -> None:
        super().__init__(draft, "Result", "Memory per GPU, what your runs say, and plans "
                                          "that fit")
        self._sizing, self._settings = sizing, settings
        self.summary: Summary | None = None
        self.sizer: Sizer | None = None
        self.candidates: list[memory_bars.Candidate] = []  # as asked, or Headroom's picks
        self.bars: list[memory_bars.Bar] = []
        self.plans: list[Plan] = []
        self.answer: CardAnswer | None = None  # card mode's answer
        self.selected = 0  # rank of the plan drawn beside the GPUs (0: none)
        self._shown = 0  # the bar the figures are for: the selected plan's, else the first
        self.planning = False
        self._worker: Worker | None = None  # the planner's current job
        self.headline = FittedLabel(objectName="headline")
        self.headline.setStyleSheet(HEADLINE_STYLE)
        self.note = FittedLabel(objectName="otherFigures")
        self.note.setStyleSheet(HINT_STYLE)
        self.figures = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText,
                              objectName="figures")
        self.figures.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.figures.linkActivated.connect(self._open_link)
        self.chart = MemoryChart()
        self.simulate_box = SimulateBox(sizing, draft)
        self.batch = StopSlider()
        self.seq = StopSlider()
        self.batch_label, self.seq_label = QLabel(), QLabel()
        self.plans_title = QLabel()
        self.plan_status = hint_label()
        self.plans_table = PlansTable()
        self.status = hint_label()
        export_menu.attach(self.plans_table, self._plan_at, lambda: self.draft.spec,
                           self.status.setText)
        self._replan = QTimer(self, singleShot=True, interval=REPLAN_MS)
        self._layout()
        self._connect()

    def _layout(self) -> None:
        top = QWidget()
        row = QHBoxLayout(top)
        row.setContentsMargins(0, 0, 0, 0)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.figures)
        column.addWidget(self.simulate_box)
        column.addStretch(1)
        row.addWidget(_scrolling(left, FIGURES_WIDTH))
        right = QVBoxLayout()
        right.addWidget(self.chart, 1)
        right.addLayout(self._sliders())
        row.addLayout(right, 1)
        bottom = QWidget()
        plans = QVBoxLayout(bottom)
        plans.setContentsMargins(0, 0, 0, 0)
        header = QHBoxLayout()
        header.addWidget(self.plans_title)
        header.addWidget(self.plan_status, 1)
        plans.addLayout(header)
        plans.addWidget(self.plans_table, 1)
        split = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setSizes([330, 200])
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        self.export_button = QPushButton("Export Report…")
        self.copy_button = QPushButton("Copy as Text")
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.headline)
        layout.addWidget(self.note)
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
        self.plans_table.sig_selected.connect(self.select_plan)
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
        self.plans, self.answer, self.selected = [], None, 0
        self.candidates = self._asked()
        self._fill_plans()
        self.update_chart()
        self._start_plans()

    def _asked(self) -> list[memory_bars.Candidate]:
        d = self.draft
        if d.mode == "card":
            card = d.card_gpu()
            setup = d.setup(with_layout=False).but(n_gpus=d.card_count,
                                                   gpus_per_node=card.gpus_per_node)
            return memory_bars.asked(setup, [card])
        return [] if d.recommend else memory_bars.asked(d.setup(), d.chosen_gpus())

    def update_chart(self) -> None:
        """The fast path: bars, headline and figures for the current what-if values."""
        shown_plan = self.plans[self.selected - 1] if self.selected else None
        candidates = list(self.candidates)
        if shown_plan and not any(c.plan is shown_plan for c in candidates):
            candidates.append(memory_bars.plan_candidate(
                shown_plan, catalog()[shown_plan.gpu], self.selected))
        self.bars = memory_bars.bars(self.sizer, candidates, self.draft.micro_batch,
                                     self.draft.seq_len)
        self._shown = next((i for i, b in enumerate(self.bars) if b.plan is shown_plan), 0)
        self.chart.show_bars(self.bars, self._shown if shown_plan else None)
        outcome = self.outcome()
        self.headline.setText(outcome.headline)
        self.note.setText(memory_bars.other_figures(outcome.shown.check) if outcome.shown
                          else "")
        self.note.setVisible(bool(self.note.text()))
        self.figures.setText(figures_html(outcome) or
                             "<p>Headroom is looking for GPUs and layouts that fit…</p>")

    def outcome(self) -> Outcome:
        shown = self.bars[self._shown] if self.bars else None
        reason = self.sizer.uncalibrated(self.draft.setup()) if self.sizer else ""
        return Outcome(self.draft, self.bars, shown, reason, self.plans,
                       self.summary.names if self.summary else {}, self._headline())

    def _headline(self) -> str:
        d = self.draft
        if d.mode == "card":
            return sizing_plans.card_headline(None if self.planning else self.answer, d.tokens)
        asked = [b for b in self.bars if b.plan is None]
        return sizing_plans.headline(asked, self.plans, d.tokens, self.planning,
                                     self._budget())

    def _budget(self) -> int | None:
        d = self.draft
        return None if d.max_gpus is None else max(d.max_gpus, d.n_gpus)

    def select_plan(self, rank: int) -> None:
        """Draw the plan of this rank beside the GPUs, and its breakdown."""
        self.selected = rank
        self.plans_table.select(rank)
        self.update_chart()

    def _plan_at(self, pos: QPoint) -> Plan | None:
        """The plan of the row under the mouse (Export as… acts on it)."""
        rank = self.plans_table.rank_at(pos)
        return self.plans[rank - 1] if rank and rank <= len(self.plans) else None

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
        self.simulate_box.stale()
        self._replan.start()

    def _label_sliders(self) -> None:
        self.batch_label.setText(f"{self.draft.micro_batch:,}")
        self.seq_label.setText(f"{self.draft.seq_len:,}")

    # ---- Plans

    def _start_plans(self) -> None:
        d = self.draft
        self.planning = True
        self.plan_status.setText("Planning…")
        self.headline.setText(self._headline())
        # Bound methods: a reply that lands after the page is gone is dropped with it.
        if d.mode == "card":
            self._worker = self._sizing.fit_to_card(
                self.sizer, d.setup(with_layout=False), d.card_gpu(), d.card_count,
                self._on_plans, self._on_plans_failed)
            return
        gpus = list(catalog().values()) if d.recommend else d.chosen_gpus()
        self._worker = self._sizing.plan(self.sizer, d.setup(), gpus, self._budget(),
                                         self._on_plans, self._on_plans_failed)

    def _on_plans_failed(self, message: str) -> None:
        self._on_plans(None, message)

    def _on_plans(self, found: list[Plan] | CardAnswer | None, error: str = "") -> None:
        if self._worker is None or self.sender() is not self._worker.signals:
            return  # the sliders moved on: a newer plan is coming
        self.planning = False
        d = self.draft
        if isinstance(found, CardAnswer):
            self.answer = found
            self.plans = ([found.best] if found.best else []) + (
                [found.more_cards] if found.more_cards else []) + found.changes
        else:
            self.plans = found or []
        if d.recommend and d.mode != "card":
            self.candidates = memory_bars.recommended(self.plans, list(catalog().values()))
        self.selected = 1 if self.plans else 0
        self._fill_plans()
        self.update_chart()
        self.plan_status.setText(error or self._plan_count())

    def _plan_count(self) -> str:
        if self.draft.mode == "card":
            n = len(self.plans)
            return f"{n} plan{'s' * (n > 1)}" if n else "Nothing fits these cards"
        budget = budget_words(self._budget())
        if not self.plans:
            return f"No layout {budget} fits with a {self.draft.margin:.0%} margin"
        return f"{len(self.plans)} plans, {budget}; click one to draw it"

    def _fill_plans(self) -> None:
        d = self.draft
        card = (d.card_gpu().name, d.card_count) if d.mode == "card" else None
        self.plans_table.show_sections(sizing_plans.sections(self.plans, d.tokens, card))
        if self.selected:
            self.plans_table.select(self.selected)
        self.plans_title.setText(f"<b>Plans that fit</b>, best first; time and cost for "
                                 f"{html.escape(d.data_line())}")

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
        path = dialogs.ask_report_path(self, self._settings, "Export the sizing report",
                                       "sizing-report")
        if path is None:
            return
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


def _scrolling(widget: QWidget, width: int) -> QScrollArea:
    """``widget`` in a frameless scroll area of this width (it scrolls when the page is short)."""
    area = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setWidget(widget)
    area.setFixedWidth(width)
    return area
