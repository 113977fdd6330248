"""The Project view's door to the tracker, beside :class:`AppServices`.

Projects are stored as their TOML text; planning one (the calibration fit on
every stored run, then each stage on the pool) runs in the worker pool, and
an answer for a project no longer shown is dropped. When runs change (a
pilot ingested, a linked run finished) the shown project is planned again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from core.resources import resources_dir
from tracker import projects
from tracker.db.projects import StoredProject

if TYPE_CHECKING:
    from desktop.services import AppServices


class ProjectServices(QObject):
    sig_projects_changed = Signal(list)
    """The stored projects (``StoredProject``), by name."""
    sig_planned = Signal(object)
    """A :class:`tracker.projects.Planned` for the project shown."""
    sig_plan_failed = Signal(str)
    """Why the shown project could not be planned, in one line."""

    def __init__(self, services: AppServices) -> None:
        super().__init__(services)
        self._services = services
        self.shown: int | None = None  # the project the view shows
        self._asked = 0  # bumped per plan request: older answers are dropped
        services.sig_runs_changed.connect(self._replan)
        services.sig_database_changed.connect(lambda _label: self.refresh())

    @property
    def store(self):
        return self._services.store

    def refresh(self) -> list[StoredProject]:
        found = projects.projects(self.store)
        self.sig_projects_changed.emit(found)
        return found

    @staticmethod
    def examples() -> list[Path]:
        """The example projects shipped in ``resources/projects``."""
        return sorted((resources_dir() / "projects").glob("*.toml"))

    def import_file(self, path: Path) -> StoredProject:
        """Store a TOML file (replacing the stored project of the same name); ProjectError."""
        stored = projects.save(self.store, path.read_text(encoding="utf-8"),
                               str(path.resolve().parent))
        self.refresh()
        return stored

    def save_source(self, project_id: int, source: str) -> StoredProject:
        """Replace a project's text after checking it (ProjectError names the stage and field)."""
        stored = projects.save(self.store, source, project_id=project_id)
        self.refresh()
        self.plan(stored.id)
        return stored

    def delete(self, project_id: int) -> None:
        projects.delete(self.store, project_id)
        self.refresh()

    def stored(self, project_id: int) -> StoredProject:
        return projects.find_project(self.store, str(project_id))

    def link(self, project_id: int, stage_ref: str, run_id: int, role: str,
             card: str | None) -> None:
        projects.link(self.store, self.stored(project_id), stage_ref, run_id, role, card)
        self.plan(project_id)

    def unlink(self, project_id: int, stage_ref: str, run_id: int) -> None:
        projects.unlink(self.store, self.stored(project_id), stage_ref, run_id)
        self.plan(project_id)

    def run_card(self, run_id: int) -> str | None:
        """The GPU a stored run's shape names (None: it does not say, e.g. a CPU run)."""
        return self.store.run(run_id).shape.gpu_model

    def plan(self, project_id: int) -> None:
        """Plan a stored project in the background; ``sig_planned`` brings the answer."""
        self.shown = project_id
        self._asked += 1
        asked, store = self._asked, self.store

        def work(_worker) -> projects.Planned:
            stored = projects.find_project(store, str(project_id))
            return projects.plan(projects.read(stored.source, stored.base_dir), store, stored)

        self._services.workers.start(work, lambda planned: self._answer(asked, planned),
                                     lambda message: self._failed(asked, message))

    def _answer(self, asked: int, planned: projects.Planned) -> None:
        if asked == self._asked:
            self.sig_planned.emit(planned)

    def _failed(self, asked: int, message: str) -> None:
        if asked == self._asked:
            self.sig_plan_failed.emit(message.splitlines()[-1] if message else "planning failed")

    def _replan(self) -> None:
        if self.shown is not None:
            self.plan(self.shown)


def project_services_for(services: AppServices) -> ProjectServices:
    """The app's one :class:`ProjectServices` (made on first use)."""
    return services.findChild(ProjectServices) or ProjectServices(services)
