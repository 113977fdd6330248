"""The main window: layout, menus, toolbar, status bar, and drops anywhere on it.

Layout only: the panels come from :data:`desktop.panels.PANELS`, the commands
from :data:`desktop.actions.ACTIONS`; the work is the services' and views'. The
window may show before the database has opened: it says so, and the commands
that need the database wait for ``sig_store_ready``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolBar,
    QWidget,
)

from desktop import dialogs
from desktop.actions import ACTIONS, MENUS
from desktop.composition import Services
from desktop.panels import PANELS
from desktop.presenters.team_connection import database_label
from desktop.settings import Settings
from desktop.views import help_dialogs
from desktop.views.alert_views import AlertIndicator
from desktop.views.data_menus import GuideMenu, RecentMenu
from desktop.views.runs_panel import RunsPanel
from desktop.views.team_commands import TeamCommands
from desktop.widgets.drop import local_paths
from desktop.widgets.empty_state import EmptyState
from tracker.readers import LOG_PATTERNS, READERS

DOCK_AREAS = {"bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
              "right": Qt.DockWidgetArea.RightDockWidgetArea}
LOG_FILTER = f"Training logs ({' '.join(LOG_PATTERNS)});;All files (*)"
DEFAULT_SIZE = QSize(1440, 900)
NEED_SELECTION = ("rename", "tags", "notes", "delete", "size_like", "rediagnose",
                  "rescan_checkpoints")
NEED_RUNS = ("reload", "export_plots", "select_all", "find")
NEED_STORE = ("connect_team", "size_run", "projects")
OPENING = "Opening the database…"


class MainWindow(QMainWindow):
    def __init__(self, services: Services, settings: Settings) -> None:
        super().__init__()
        self.composed, self.services, self.settings = services, services.app, settings
        self.setWindowTitle("Headroom")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.runs_panel = RunsPanel(services.app, settings)
        self.left = QSplitter(Qt.Orientation.Vertical, childrenCollapsible=False)
        self.left.addWidget(self.runs_panel)
        self.left.setStretchFactor(0, 3)
        self.tabs = QTabWidget(documentMode=True)
        self.panels: dict[str, QWidget] = {}
        self.docks: dict[str, QDockWidget] = {}
        self._add_panels()
        self.splitter = QSplitter(Qt.Orientation.Horizontal, childrenCollapsible=False)
        self.splitter.addWidget(self.left)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([640, 800])
        self.empty = EmptyState([r.label for r in READERS])
        self.opening = QLabel(OPENING, alignment=Qt.AlignmentFlag.AlignCenter)
        self.opening.setStyleSheet("color: #52606d;")
        self.central = QStackedWidget()
        self.central.addWidget(self.opening)
        self.central.addWidget(self.empty)
        self.central.addWidget(self.splitter)
        self.setCentralWidget(self.central)
        self.actions_: dict[str, QAction] = {}
        self._followers: dict[QWidget, QAction] = {}
        self._add_actions()
        self._add_status_bar()
        self._connect()
        self.team = TeamCommands(self, services.app, services.team, settings, self.actions_)
        self._restore()
        self._on_runs_changed()
        self.runs_panel.reload()

    # ---- Building

    def _add_panels(self) -> None:
        for spec in PANELS:
            widget = spec.factory(self.composed, self.settings)
            self.panels[spec.key] = widget
            if spec.area == "tab":
                self.tabs.addTab(widget, spec.title)
            elif spec.area == "left":
                self.left.addWidget(widget)
                self.left.setStretchFactor(self.left.count() - 1, 1)
                widget.hide()  # shown when it has something to say
            else:
                dock = QDockWidget(spec.title, self, objectName=f"{spec.key}Dock")
                dock.setWidget(widget)
                self.addDockWidget(DOCK_AREAS[spec.area], dock)
                self.docks[spec.key] = dock

    def _add_actions(self) -> None:
        menus = {title: self.menuBar().addMenu(title) for title in MENUS}
        toolbar = QToolBar("Main", self, objectName="mainToolbar", movable=False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.setIconSize(QSize(16, 16))
        self.addToolBar(toolbar)
        for spec in ACTIONS:
            action = QAction(spec.text, self, checkable=spec.checkable, toolTip=spec.tip or None,
                             statusTip=spec.tip)
            action.setShortcuts(spec.shortcuts())
            if spec.icon is not None:
                action.setIcon(self.style().standardIcon(spec.icon))
            action.triggered.connect(getattr(self, spec.slot))
            if spec.separator:
                menus[spec.menu].addSeparator()
            menus[spec.menu].addAction(action)
            if spec.toolbar:
                toolbar.addAction(action)
            self.actions_[spec.id] = action
        menus["&File"].insertMenu(self.actions_["load_samples"],
                                  RecentMenu(self.settings, self.open_paths, self))
        menus["&Help"].insertMenu(self.actions_["shortcuts"], GuideMenu(self))
        menus["&View"].addSeparator()
        for spec in PANELS:
            if spec.area == "left":
                menus["&View"].addAction(self._visibility_action(spec.title, self.panels[spec.key]))
        for dock in self.docks.values():
            menus["&View"].addAction(dock.toggleViewAction())

    def _visibility_action(self, title: str, widget: QWidget) -> QAction:
        """A checkable Show/Hide command that follows the widget's own visibility."""
        action = QAction(title, self, checkable=True)
        action.toggled.connect(widget.setVisible)
        self._followers[widget] = action
        widget.installEventFilter(self)
        return action

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Show, QEvent.Type.Hide) and watched in self._followers:
            # Its own visibility, not its window's: minimising must not untick the command.
            self._followers[watched].setChecked(watched.isVisibleTo(watched.parentWidget()))
        return super().eventFilter(watched, event)

    def _add_status_bar(self) -> None:
        self.count_label = QLabel()
        self.db_label = QLabel(OPENING)
        self.db_label.setStyleSheet("color: #616e7c;")
        self.statusBar().addPermanentWidget(self.db_label)
        self.statusBar().addPermanentWidget(AlertIndicator(  # watched runs' news; hidden till then
            self.composed.alerts, self.composed.compare, self.settings))
        self.statusBar().addPermanentWidget(self.count_label)

    def _connect(self) -> None:
        s = self.services
        s.sig_runs_changed.connect(self._on_runs_changed)
        s.sig_selection_changed.connect(self._enable_actions)
        s.sig_ingest_started.connect(self._on_ingest_started)
        s.sig_database_changed.connect(self.db_label.setText)
        s.sig_store_ready.connect(self._on_store_ready)
        s.sig_sizing_requested.connect(self._open_wizard)
        s.sig_message.connect(lambda text: self.statusBar().showMessage(text, 10_000))
        self.empty.sig_open_files_requested.connect(self.open_files)
        self.empty.sig_open_folder_requested.connect(self.open_folder)
        self.empty.sig_samples_requested.connect(self.load_samples)
        compare = self.composed.compare  # the summary views select and filter runs
        compare.sig_select_requested.connect(self.runs_panel.select_ids)
        compare.sig_filter_requested.connect(self._filter_runs)

    # ---- Window state

    def _restore(self) -> None:
        geometry = self.settings.layout("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(DEFAULT_SIZE)
        state = self.settings.layout("window")
        if state is None or not self.restoreState(state):
            for dock in self.docks.values():
                dock.hide()  # shown when there is something to show
        for key, widget in self._layout_parts().items():
            state = self.settings.layout(key)
            if state is not None:
                widget.restoreState(state)

    def _layout_parts(self) -> dict[str, QSplitter | QHeaderView]:
        """Parts whose layout the user shapes and the next launch restores."""
        return {"splitter": self.splitter, "left": self.left,
                "runs_header": self.runs_panel.table.horizontalHeader()}

    def closeEvent(self, event: QCloseEvent) -> None:
        self.settings.set_layout("geometry", self.saveGeometry())
        self.settings.set_layout("window", self.saveState())
        for key, widget in self._layout_parts().items():
            self.settings.set_layout(key, widget.saveState())
        self.settings.sync()
        self.services.shutdown()
        self.team.close()
        super().closeEvent(event)

    # ---- Drops anywhere on the window

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.settings.add_recent(paths)
            self.services.ingest(paths)

    # ---- Slots

    def _on_store_ready(self) -> None:
        self.db_label.setText(database_label(self.services.store.display_url))

    def _on_runs_changed(self) -> None:
        count = self.services.run_count()
        ready = self.services.ready
        self.count_label.setText(f"{count} run{'s' if count != 1 else ''}" if ready else "")
        page = self.splitter if count else self.empty
        self.central.setCurrentWidget(page if ready else self.opening)
        self._enable_actions()

    def _enable_actions(self) -> None:
        """Commands on runs need a selection; reload and export need runs; some the database."""
        selected = bool(self.services.selected)
        for action_id in NEED_SELECTION:
            self.actions_[action_id].setEnabled(selected)
        for action_id in NEED_RUNS:
            self.actions_[action_id].setEnabled(self.central.currentWidget() is self.splitter)
        for action_id in NEED_STORE:
            self.actions_[action_id].setEnabled(self.services.ready)

    def _filter_runs(self, query: str) -> None:
        self.runs_panel.filter_edit.setText(query)
        self.runs_panel.filter_edit.home(False)  # a long query reads from its start

    def _on_ingest_started(self, _paths: list[str]) -> None:
        self.panels["ingest"].show()

    # ---- Commands (the slots named in ACTIONS)

    def open_files(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Open training logs",
                                                self.settings.last_folder, LOG_FILTER)
        if names:
            self.settings.last_folder = str(Path(names[0]).parent)
            self.settings.add_recent(names)
            self.services.ingest(names)

    def open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a run folder or a folder of runs",
                                                  self.settings.last_folder)
        if folder:
            self.settings.last_folder = folder
            self.settings.add_recent([folder])
            self.services.ingest([folder])

    def open_paths(self, paths: list[str]) -> None:
        """Come to the front and ingest ``paths`` (what another launch handed over)."""
        if self.isMinimized():
            self.showNormal()
        self.raise_()
        self.activateWindow()
        if paths:
            self.settings.add_recent(paths)
            self.services.ingest(paths)

    def load_samples(self) -> None:
        self.services.ingest(self.services.sample_paths())

    def reload(self) -> None:
        self.services.reload()

    def watch_folder(self) -> None:
        self.panels["watch"].choose_folder()

    def connect_team(self) -> None:
        self.team.connect()

    def use_local_database(self) -> None:
        self.team.use_local()

    def publish_runs(self) -> None:
        self.team.publish()

    def take_offline(self) -> None:
        self.team.take_offline()

    def export_plots(self) -> None:
        self.tabs.setCurrentWidget(self.panels["plots"])
        self.panels["plots"].export_dialog()

    def rename_run(self) -> None:
        self.runs_panel.rename_current()

    def edit_tags(self) -> None:
        self.runs_panel.edit_tags()

    def edit_notes(self) -> None:
        self.runs_panel.edit_notes()

    def delete_runs(self) -> None:
        self.runs_panel.delete_selected()

    def select_all(self) -> None:
        self.runs_panel.select_all()

    def find(self) -> None:
        self.runs_panel.focus_filter()

    def toggle_full_screen(self) -> None:
        if self.isFullScreen():
            self.showNormal()
        else:
            self.showFullScreen()
        self.actions_["full_screen"].setChecked(self.isFullScreen())

    def size_next_run(self) -> None:
        self._open_wizard(None)

    def size_run_like_this(self) -> None:
        if self.services.selected:
            self._open_wizard(self.services.selected[-1])

    def _open_wizard(self, run_id: int | None) -> None:
        from desktop.views.sizing.wizard import SizingWizard

        self.wizard = SizingWizard(self.composed.sizing, self.settings, run_id, self)
        self.wizard.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.wizard.sig_open_run.connect(self.show_run)
        self.wizard.show()

    def open_projects(self) -> None:
        from desktop.views.project.window import ProjectWindow

        if getattr(self, "project_window", None) is None:
            self.project_window = ProjectWindow(self.services, self.composed.projects,
                                                self.settings, self)
            self.project_window.resize(1280, 800)
            self.project_window.sig_open_run.connect(self.show_run)
        self.project_window.show()
        self.project_window.raise_()

    def show_run(self, run_id: int) -> None:
        """Select a run and show its details (the wizard's links to past runs)."""
        self.runs_panel.select_ids([run_id])
        self.tabs.setCurrentWidget(self.panels["details"])
        self.activateWindow()

    def show_calibration(self) -> None:
        self.tabs.setCurrentWidget(self.panels["calibration"])

    def rediagnose(self) -> None:
        self.services.rediagnose(list(self.services.selected))

    def rescan_checkpoints(self) -> None:
        self.tabs.setCurrentWidget(self.panels["checkpoints"])
        self.panels["checkpoints"].rescan()

    def about(self) -> None:
        dialogs.about(self, self.services.display_url)

    def show_shortcuts(self) -> None:
        menus = [(a.text(), a.shortcuts()) for a in self.actions_.values()]
        self.shortcuts_dialog = help_dialogs.show_shortcuts(self, menus)

    def report_problem(self) -> None:
        help_dialogs.report_problem(self, dialogs.problem_report(self.services.display_url))
