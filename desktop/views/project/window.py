"""The Project window: stored projects, their variants side by side, stages, pilots, the TOML.

The Plan tab shows what ``headroom plan`` prints for the project: variants as
columns, the chosen variant's stages with their status from linked runs, a
stage's story (its plan, pilot and checks) and the per-stage charts. The
Source tab edits the project's TOML; Apply stores it only when it reads, and
otherwise shows the one-line error naming the stage and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop import dialogs
from desktop.presenters import project_view as view
from desktop.presenters.sizing_report import write_report
from desktop.project_services import ProjectServices
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.views.project.chart import ProjectChart

STATUS = view.STAGE_HEADERS.index("Status")
REPORT_CHART_SIZE = (1200, 420)

if TYPE_CHECKING:
    from desktop.project_services import Planned


class ProjectWindow(QWidget):
    sig_open_run = Signal(int)
    """A linked run's name was clicked: show it in the main window."""

    def __init__(self, services: AppServices, projects: ProjectServices, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("Projects — Headroom")
        self.services, self._settings = services, settings
        self.projects = projects
        self.planned: Planned | None = None
        self._build()
        self._connect()
        self._on_projects(self.projects.refresh())

    # ---- Building

    def _build(self) -> None:
        self.chooser = QComboBox(minimumContentsLength=28)
        self.new_button = QToolButton(text="New from Example",
                                      popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.new_button)
        for path in self.projects.examples():
            menu.addAction(path.stem, lambda p=path: self.import_file(p))
        self.new_button.setMenu(menu)
        self.import_button = QPushButton("Import TOML…")
        self.export_button = QPushButton("Export Report…")
        self.delete_button = QPushButton("Delete")
        bar = QHBoxLayout()
        for w in (QLabel("Project:"), self.chooser, self.new_button, self.import_button):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.export_button)
        bar.addWidget(self.delete_button)
        self.status = QLabel(wordWrap=True, objectName="projectStatus")
        self.tabs = QTabWidget(documentMode=True)
        self.tabs.addTab(self._plan_tab(), "Plan")
        self.tabs.addTab(self._source_tab(), "Source (TOML)")
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.status)

    def _plan_tab(self) -> QWidget:
        self.summary = QLabel(wordWrap=True)
        self.variants = _table()
        self.variants.setWordWrap(True)
        self.variants.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.variants.horizontalHeader().sectionResized.connect(
            lambda *_: self.variants.resizeRowsToContents())
        self.variant_choice = QComboBox(minimumContentsLength=22)
        self.stages = _table(view.STAGE_HEADERS)
        self.stages.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.details = QTextBrowser(openLinks=False)
        self.link_pilot = QPushButton("Link Selected Run as Pilot")
        self.link_run = QPushButton("Link Selected Run as Stage Run")
        self.unlink_button = QPushButton("Unlink…")
        self.chart = ProjectChart()
        stage_box = QWidget()
        box = QVBoxLayout(stage_box)
        box.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        for w in (QLabel("Stages of"), self.variant_choice):
            row.addWidget(w)
        row.addStretch(1)
        for w in (self.link_pilot, self.link_run, self.unlink_button):
            row.addWidget(w)
        box.addLayout(row)
        box.addWidget(self.stages)
        bottom = QSplitter(Qt.Orientation.Horizontal, childrenCollapsible=False)
        bottom.addWidget(self.chart)
        bottom.addWidget(self.details)
        bottom.setSizes([760, 480])
        split = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        for w in (self.variants, stage_box, bottom):
            split.addWidget(w)
        split.setSizes([260, 130, 310])
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        return tab

    def _source_tab(self) -> QWidget:
        self.editor = QPlainTextEdit(lineWrapMode=QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.apply_button = QPushButton("Apply")
        self.error = QLabel(wordWrap=True, styleSheet="color: #b3261e;")
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.addWidget(self.editor, 1)
        row = QHBoxLayout()
        row.addWidget(self.error, 1)
        row.addWidget(self.apply_button)
        layout.addLayout(row)
        return tab

    def _connect(self) -> None:
        self.projects.sig_projects_changed.connect(self._on_projects)
        self.projects.sig_planned.connect(self.show_plan)
        self.projects.sig_plan_failed.connect(lambda m: self.status.setText(f"Not planned: {m}"))
        self.chooser.activated.connect(lambda _i: self._choose(self.chooser.currentData()))
        self.variant_choice.currentIndexChanged.connect(self._show_variant)
        self.stages.itemSelectionChanged.connect(self._show_stage)
        self.details.anchorClicked.connect(self._open_link)
        self.import_button.clicked.connect(self._import_dialog)
        self.export_button.clicked.connect(self._export_dialog)
        self.delete_button.clicked.connect(self._delete)
        self.apply_button.clicked.connect(self.apply_source)
        self.link_pilot.clicked.connect(lambda: self.link_selected("pilot"))
        self.link_run.clicked.connect(lambda: self.link_selected("run"))
        self.unlink_button.clicked.connect(self._unlink)
        self.services.sig_selection_changed.connect(lambda _ids: self._enable())

    # ---- Projects

    def _on_projects(self, stored: list) -> None:
        current = self.chooser.currentData()
        self.chooser.clear()
        for p in stored:
            self.chooser.addItem(p.name, p.id)
        ids = [p.id for p in stored]
        if current in ids:
            self.chooser.setCurrentIndex(ids.index(current))
        elif ids:
            self._choose(ids[0])
        else:
            self.status.setText("No project yet: start from an example or import a TOML file "
                                "(resources/projects/ has two).")
        self._enable()

    def _choose(self, project_id: int | None) -> None:
        if project_id is None:
            return
        self.chooser.setCurrentIndex(max(0, self.chooser.findData(project_id)))
        self.editor.setPlainText(self.projects.stored(project_id).source)
        self.error.clear()
        self.status.setText("Planning…")
        self.projects.plan(project_id)

    def import_file(self, path: Path) -> None:
        self.status.setText(f"Importing {path.name}…")
        self.projects.import_file(path, lambda stored: self._choose(stored.id),
                                  self.status.setText)

    def apply_source(self) -> None:
        """Store the edited TOML if it reads; else show its one-line error."""
        project_id = self.chooser.currentData()
        if project_id is not None:
            self.status.setText("Saving…")
            self.projects.save_source(project_id, self.editor.toPlainText(), self._saved,
                                      self.error.setText)

    def _saved(self) -> None:
        self.error.clear()
        self.status.setText("Saved; planning…")

    def _delete(self) -> None:
        project_id = self.chooser.currentData()
        if project_id is not None and dialogs.confirm_delete_project(self,
                                                                     self.chooser.currentText()):
            self.projects.delete(project_id)

    # ---- The plan

    def show_plan(self, planned: Planned) -> None:
        if planned.stored is None or planned.stored.id != self.chooser.currentData():
            return
        self.planned = planned
        plan = planned.plan
        p = plan.project
        pool = ", ".join(f"{c.count} × {c.name} ({'owned' if c.owned else 'rented'}, "
                         f"{view.money(c.gpu.usd_per_hour)}/GPU-hour)" for c in p.pool)
        limits = "".join([f"; deadline {p.deadline_days:g} days" if p.deadline_days else "",
                          f"; budget {view.money(p.budget_usd)}" if p.budget_usd else ""])
        self.summary.setText(f"<b>{p.name}</b> — {p.description}<br>Pool: {pool}{limits}")
        _fill(self.variants, [r[1:] for r in view.comparison(plan)],
              [v.name for v in plan.variants], [r[0] for r in view.comparison(plan)])
        self.variants.resizeRowsToContents()
        chosen = self.variant_choice.currentText()
        self.variant_choice.blockSignals(True)
        self.variant_choice.clear()
        self.variant_choice.addItems([v.name for v in plan.variants])
        self.variant_choice.setCurrentIndex(max(0, self.variant_choice.findText(chosen)))
        self.variant_choice.blockSignals(False)
        self._show_variant()
        problems = plan.errors + planned.notes
        self.status.setText(" · ".join(problems) if problems else
                            f"Planned {len(plan.variants)} variants at {_now()}")
        self._enable()

    def variant(self):
        if self.planned is None or self.variant_choice.currentIndex() < 0:
            return None
        return self.planned.plan.variants[self.variant_choice.currentIndex()]

    def _show_variant(self) -> None:
        v = self.variant()
        if v is None:
            return
        _fill(self.stages, view.stage_rows(v), list(view.STAGE_HEADERS))
        for row, s in enumerate(v.stages):
            self.stages.item(row, STATUS).setForeground(QColor(view.STATUS_COLOURS[s.status]))
        self.chart.show_variants([v])
        if v.stages:
            self.stages.selectRow(0)

    def stage(self):
        v, rows = self.variant(), self.stages.selectionModel().selectedRows()
        return v.stages[rows[0].row()] if v is not None and rows else None

    def _show_stage(self) -> None:
        s = self.stage()
        if s is None or self.planned is None:
            self.details.clear()
            return
        links = [(i.role, i.run_id, i.run_name, i.run_status) for i in self.planned.links
                 if (i.variant, i.stage) == (s.variant, s.stage.name)]
        self.details.setHtml(view.stage_html(s, links))
        self._enable()

    # ---- Linking runs

    def link_selected(self, role: str, card: str | None = None) -> None:
        """Link the run selected in the main window to the shown stage."""
        s, project_id = self.stage(), self.chooser.currentData()
        if s is None or not self.services.selected or project_id is None:
            return
        run_id = self.services.selected[-1]
        if card is None and not self.projects.run_card(run_id):
            card = self._ask_card()
            if card is None:
                return
        self.status.setText(f"Linked run {run_id} to {s.stage.name} as its {role}; planning…")
        self.projects.link(project_id, f"{s.variant}/{s.stage.name}", run_id, role, card,
                           lambda why: self.status.setText(why.strip("'\"")))

    def _ask_card(self) -> str | None:
        names = [c.name for c in self.planned.plan.project.pool]
        name, ok = QInputDialog.getItem(self, "Which card did it run on?",
                                        "The run's log does not name its GPU:", names, 0, False)
        return name if ok else None

    def _unlink(self) -> None:
        s = self.stage()
        if s is None or self.planned is None:
            return
        linked = [i for i in self.planned.links if (i.variant, i.stage) == (s.variant,
                                                                            s.stage.name)]
        labels = [f"{i.role}: run {i.run_id} ({i.run_name})" for i in linked]
        if not labels:
            return
        label, ok = QInputDialog.getItem(self, "Unlink a run", "Run:", labels, 0, False)
        if ok:
            item = linked[labels.index(label)]
            self.projects.unlink(self.chooser.currentData(), f"{s.variant}/{s.stage.name}",
                                 item.run_id)

    def _open_link(self, url) -> None:
        link = url.toString()
        if link.startswith("run:"):
            self.sig_open_run.emit(int(link.removeprefix("run:")))

    def _enable(self) -> None:
        has_plan = self.planned is not None
        for button in (self.export_button, self.delete_button):
            button.setEnabled(self.chooser.count() > 0 and has_plan)
        can_link = has_plan and self.stage() is not None and bool(self.services.selected)
        self.link_pilot.setEnabled(can_link)
        self.link_run.setEnabled(can_link)
        self.unlink_button.setEnabled(has_plan and self.stage() is not None)

    # ---- Report

    def export(self, path: Path) -> None:
        """The project report: HTML with the charts inside, or Markdown with a PNG beside it."""
        if self.planned is None:
            return
        chart = ProjectChart()
        chart.resize(*REPORT_CHART_SIZE)
        chart.show_variants(list(self.planned.plan.variants))
        png = chart.png()
        chart.deleteLater()
        write_report(path, view.blocks(self.planned.plan), png)

    def _export_dialog(self) -> None:
        path = dialogs.ask_report_path(self, self._settings, "Export the project report",
                                       "project-report")
        if path is None:
            return
        try:
            self.export(path)
        except OSError as err:
            self.status.setText(f"Could not write {path}: {err.strerror or err}")
            return
        self.status.setText(f"Saved {path}")

    def _import_dialog(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Import a project",
                                              self._settings.folder_for("project"),
                                              "Project (*.toml)")
        if name:
            self._settings.remember_folder("project", str(Path(name).parent))
            self.import_file(Path(name))


def _table(headers=()) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(list(headers))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setWordWrap(False)
    table.verticalHeader().setDefaultSectionSize(22)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    return table


def _fill(table: QTableWidget, rows: list, headers: list[str],
          row_labels: list[str] | None = None) -> None:
    table.clear()
    table.setColumnCount(len(headers))
    table.setRowCount(len(rows))
    table.setHorizontalHeaderLabels(headers)
    if row_labels is not None:
        table.setVerticalHeaderLabels(row_labels)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(str(value)))


def _now() -> str:
    from datetime import datetime

    return f"{datetime.now():%H:%M:%S}"
