"""The Project view's door to the tracker, beside :class:`AppServices`.

Projects are stored as their TOML text; storing, deleting and linking go
through the app's edits (in the worker pool, in order), and the view hears
back through callbacks; planning one (the calibration fit on every stored
run, then each stage on the pool) runs in the pool too, and an answer for a
project no longer shown is dropped. When runs change (a
pilot ingested, a linked run finished) the shown project is planned again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from core.resources import resources_dir

if TYPE_CHECKING:  # tracker.projects loads the ORM: it is imported when first used
    from desktop.services import AppServices
    from tracker.db.projects import StoredProject
    from tracker.projects import Planned


class ProjectServices(QObject):
    sig_projects_changed = Signal(list)
    """The stored projects (``StoredProject``), by name."""
    sig_planned = Signal(object)
    """A :class:`Planned` for the project shown."""
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
        from tracker import projects

        found = projects.projects(self.store)
        self.sig_projects_changed.emit(found)
        return found

    @staticmethod
    def examples() -> list[Path]:
        """The example projects shipped in ``resources/projects``."""
        return sorted((resources_dir() / "projects").glob("*.toml"))

    def import_file(self, path: Path, on_done: Callable[[StoredProject], None],
                    on_error: Callable[[str], None]) -> None:
        """Store a TOML file (replacing the stored project of the same name); ``on_error``
        says why not (a ProjectError's one line, or the file's)."""
        from tracker import projects

        def save(store) -> StoredProject:
            return projects.save(store, path.read_text(encoding="utf-8"),
                                 str(path.resolve().parent))

        self._edit(save, self._stored_then(on_done), on_error)

    def save_source(self, project_id: int, source: str, on_done: Callable[[], None],
                    on_error: Callable[[str], None]) -> None:
        """Replace a project's text after checking it (the error names the stage and field),
        then plan it again."""
        from tracker import projects

        def saved(stored: StoredProject) -> None:
            on_done()
            self.plan(stored.id)

        self._edit(lambda store: projects.save(store, source, project_id=project_id),
                   self._stored_then(saved), on_error)

    def delete(self, project_id: int) -> None:
        from tracker import projects

        self._edit(lambda store: projects.delete(store, project_id),
                   lambda _none: self.refresh(), self._services.sig_message.emit)

    def _edit(self, change: Callable, on_done: Callable, on_error: Callable[[str], None]) -> None:
        """A project edit in the app's edit queue (it changes no run)."""
        self._services.edit(change, "change the project", on_done, on_error, runs_changed=False)

    def _stored_then(self, then: Callable) -> Callable[[StoredProject], None]:
        def done(stored: StoredProject) -> None:
            self.refresh()
            then(stored)

        return done

    def stored(self, project_id: int) -> StoredProject:
        from tracker import projects

        return projects.find_project(self.store, str(project_id))

    def link(self, project_id: int, stage_ref: str, run_id: int, role: str,
             card: str | None, on_error: Callable[[str], None]) -> None:
        """Link a run to a stage (as its pilot or its run), then plan again."""
        from tracker import projects

        def change(store) -> None:
            stored = projects.find_project(store, str(project_id))
            projects.link(store, stored, stage_ref, run_id, role, card)

        self._edit(change, lambda _none: self.plan(project_id), on_error)

    def unlink(self, project_id: int, stage_ref: str, run_id: int) -> None:
        from tracker import projects

        def change(store) -> None:
            stored = projects.find_project(store, str(project_id))
            projects.unlink(store, stored, stage_ref, run_id)

        self._edit(change, lambda _none: self.plan(project_id), self._services.sig_message.emit)

    def run_card(self, run_id: int) -> str | None:
        """The GPU a stored run's shape names (None: it does not say, e.g. a CPU run)."""
        return self.store.run(run_id).shape.gpu_model

    def plan(self, project_id: int) -> None:
        """Plan a stored project in the background; ``sig_planned`` brings the answer."""
        from tracker import projects

        self.shown = project_id
        self._asked += 1
        asked, store = self._asked, self.store

        def work(_worker) -> Planned:
            stored = projects.find_project(store, str(project_id))
            return projects.plan(projects.read(stored.source, stored.base_dir), store, stored)

        self._services.workers.start(work, lambda planned: self._answer(asked, planned),
                                     lambda message: self._failed(asked, message))

    def _answer(self, asked: int, planned: Planned) -> None:
        if asked == self._asked:
            self.sig_planned.emit(planned)

    def _failed(self, asked: int, message: str) -> None:
        if asked == self._asked:
            self.sig_plan_failed.emit(message.splitlines()[-1] if message else "planning failed")

    def _replan(self) -> None:
        if self.shown is not None:
            self.plan(self.shown)
