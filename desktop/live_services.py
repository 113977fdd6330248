"""Following runs while they train: watched folders and growing logs, ingested as they change.

Beside :class:`AppServices`. A look (:class:`tracker.watch.FolderWatch`, in the
pool) stats the watched places and names the logs and run folders that
changed; they go through the services' quiet live ingest, which appends only
new points. Looks happen on a poll timer, which alone sees appends on network
filesystems and in subfolders, and sooner when Qt's file-system notifier
reports a change; a burst of writes costs one look. A watched folder that
disappears is reported once, and followed again when it comes back. Following
starts once the database is open (what a look finds is ingested into it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from core.status import RunStatus
from desktop.services import AppServices
from desktop.settings import Settings
from tracker.model import RunSummary

if TYPE_CHECKING:
    from tracker.watch import Changes, FolderWatch

# Changes within this long of the first one are read in one look.
DEBOUNCE_MS = 400
# Logs of ingested runs are followed while their last new points are this recent.
RECENT = timedelta(days=2)
# The list of ingested runs' logs is refreshed at most this often.
RUN_LOGS_MS = 30_000


class LiveServices(QObject):
    sig_places_changed = Signal()
    """The watched folders, or what is known about them, changed (the panel redraws)."""

    def __init__(self, services: AppServices, settings: Settings, poll_ms: int | None = None,
                 debounce_ms: int = DEBOUNCE_MS, clock: Callable[[], float] = time.time) -> None:
        super().__init__(services)
        self._services, self._settings = services, settings
        self._clock = clock
        self.folders = [str(Path(f)) for f in settings.watched_folders]
        self.run_logs: list[str] = []  # sources of ingested runs that may still be growing
        self.last_look: float | None = None  # clock() of the last finished look
        self.news: dict[str, tuple[float, str]] = {}  # place -> when, and what it last brought
        self._looking = self._again = False
        self._pending: list[str] = []  # units waiting for the ingest to be free
        self._announce: set[str] = set()  # folders just added: their first read is reported
        self._notifier = QFileSystemWatcher(self)
        self._notifier.directoryChanged.connect(self._soon)
        self._notifier.fileChanged.connect(self._soon)
        self._debounce = QTimer(self, singleShot=True, interval=debounce_ms)
        self._debounce.timeout.connect(self.look)
        self._poll = QTimer(self, interval=poll_ms or round(settings.poll_seconds * 1000))
        self._poll.timeout.connect(self.look)
        self._run_logs_timer = QTimer(self, singleShot=True, interval=RUN_LOGS_MS)
        self._run_logs_timer.timeout.connect(self._load_run_logs)
        services.set_stale_after(settings.stale_minutes * 60)
        services.sig_live_ingested.connect(self._on_ingested)
        services.sig_ingest_finished.connect(lambda _report: self._flush())
        services.sig_runs_changed.connect(self._on_runs_changed)
        services.sig_database_changed.connect(lambda _label: self._load_run_logs())
        services.sig_store_ready.connect(self._start)
        if services.ready:
            self._start()

    @cached_property
    def watch(self) -> FolderWatch:
        """What the looks compare against (made on first use: it loads the readers)."""
        from tracker.watch import FolderWatch

        return FolderWatch()

    # ---- Public API

    def places(self) -> list[str]:
        """Everything followed: the watched folders, then ingested runs' logs outside them."""
        return self.folders + [p for p in self.run_logs if not self._in_folder(p)]

    def add_folder(self, folder: str) -> None:
        """Follow ``folder``: its logs are read now (with a report), then as they change."""
        folder = str(Path(folder).resolve())
        if folder in self.folders:
            self._services.sig_message.emit(f"Already watching {folder}")
            return
        self.folders.append(folder)
        self._announce.add(folder)
        self._save()

    def remove_folder(self, folder: str) -> None:
        if folder in self.folders:
            self.folders.remove(folder)
            self.news.pop(folder, None)
            self._save()

    @property
    def follow_run_logs(self) -> bool:
        return self._settings.watch_run_logs

    def set_follow_run_logs(self, on: bool) -> None:
        self._settings.watch_run_logs = on
        self._load_run_logs()

    def set_stale_minutes(self, minutes: float) -> None:
        """How long a running run may stay silent before it is shown as "crashed?"."""
        self._settings.stale_minutes = minutes
        self._services.set_stale_after(minutes * 60)

    def missing(self, place: str) -> bool:
        return Path(place) in self.watch.gone

    def look(self) -> None:
        """Look at every followed place now (in the pool); one look at a time."""
        if self._looking:
            self._again = True
            return
        places, watch = [Path(p) for p in self.places()], self.watch
        self._looking = True
        self._services.workers.start(lambda _w: watch.look(places), self._on_look,
                                     self._on_look_failed)

    # ---- Looking

    def _start(self) -> None:
        self._load_run_logs()
        self._restart()

    def _restart(self) -> None:
        """Poll while there is something to follow; look at once at what is new."""
        if self.places():
            if not self._poll.isActive():
                self._poll.start()
            self.look()
        else:
            self._poll.stop()
        self.sig_places_changed.emit()

    def _soon(self, _path: str = "") -> None:
        """A change was notified: look shortly, once for the whole burst."""
        if not self._debounce.isActive():
            self._debounce.start()

    def _on_look(self, changes: Changes) -> None:
        self._looking = False
        self.last_look = self._clock()
        self._notify_on(changes)
        for place in changes.missing:
            if str(place) in self.folders:  # a run log elsewhere (another machine's) is no news
                self._services.sig_message.emit(
                    f"Watched folder {place} is gone; it is followed again if it comes back")
        for place in changes.truncated:
            self._services.sig_message.emit(
                f"{place} holds over {self.watch.max_files:,} files: only the first are followed")
        announced = [str(u) for u in changes.units if str(u) in self._announce]
        if announced:
            self._announce.difference_update(announced)
            self._services.ingest(announced)
        quiet = [str(u) for u in changes.units if str(u) not in announced]
        self._pending += [u for u in quiet if u not in self._pending]
        self._flush()
        if changes.missing or changes.units:
            self.sig_places_changed.emit()
        if self._again:
            self._again = False
            self.look()

    def _on_look_failed(self, message: str) -> None:
        self._looking = False
        self._services.sig_message.emit(f"Could not look at the watched folders: {message}")

    def _notify_on(self, changes: Changes) -> None:
        """Hand the notifier the folders and logs of this look (it drops removed ones itself)."""
        wanted = {str(p) for p in (*changes.folders, *changes.files)}
        watched = set(self._notifier.directories()) | set(self._notifier.files())
        if watched - wanted:
            self._notifier.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._notifier.addPaths(sorted(wanted - watched))

    def _flush(self) -> None:
        """Ingest what changed, unless another ingest is running (then after it)."""
        if self._pending and self._services.ingest(self._pending, live=True):
            self._pending = []

    def _on_ingested(self, report) -> None:
        """Say what the live ingest brought, per followed place, and in the status bar."""
        changed = [r for r in report.results if r.status in ("ingested", "updated", "error")]
        for result in changed:
            self.news[self._place_of(result.path)] = (self._clock(), _news(result))
        if changed:
            self._services.sig_message.emit("Live: " + "; ".join(_news(r) for r in changed[:3]))
            self.sig_places_changed.emit()
        self._flush()

    def _place_of(self, path: str) -> str:
        return next((f for f in self.folders if _within(path, f)), path)

    # ---- Ingested runs' logs

    def _on_runs_changed(self) -> None:
        if self.follow_run_logs and not self._run_logs_timer.isActive():
            self._run_logs_timer.start()

    def _load_run_logs(self) -> None:
        if not self.follow_run_logs:
            self._set_run_logs([])
            return
        since = datetime.fromtimestamp(self._clock(), UTC) - RECENT
        self._services.load_runs(lambda runs: self._set_run_logs(_growing(runs, since)))

    def _set_run_logs(self, paths: list[str]) -> None:
        if paths != self.run_logs:
            self.run_logs = paths
            self._restart()

    def _in_folder(self, path: str) -> bool:
        return any(_within(path, f) for f in self.folders)

    def _save(self) -> None:
        self._settings.watched_folders = self.folders
        self._restart()


def _growing(runs: list[RunSummary], since: datetime) -> list[str]:
    """Sources of runs that may still grow: no end recorded, new points ``since``."""
    return sorted({r.source_path for r in runs
                   if r.status in (RunStatus.RUNNING, RunStatus.STALE, RunStatus.UNKNOWN)
                   and r.last_data_at is not None and r.last_data_at >= since})


def _within(path: str, folder: str) -> bool:
    return Path(path).is_relative_to(folder)


def _news(result) -> str:
    name = result.run_name or Path(result.path).name
    if result.status == "error":
        return f"{Path(result.path).name}: {result.reason}"
    if result.status == "ingested":
        return f"new run {name}"
    return f"+{result.points:,} points to {name}" if result.points else f"{name} updated"
