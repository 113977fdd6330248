"""The app's one door to the tracker: owns the store and the worker pool, speaks in signals.

Views take an :class:`AppServices`, call one method per user action and
connect ``sig_*`` signals to their slots; they never call the tracker, and
never each other. Work that reads many files or points runs in the pool, and
so does every edit of the database (one at a time, in the order asked), so a
slow or remote database never freezes the window. The store may be opened
after the window is shown (:meth:`AppServices.open_store`): until
``sig_store_ready`` the services answer "no runs" and queue ingests.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QMetaMethod, QObject, QThread, QTimer, Signal

from core.diagnostics import Finding
from core.resources import resources_dir
from core.retention import RetentionPlan
from core.runlog import RunEvent
from core.status import STALE_AFTER_S
from desktop.presenters.plot_data import PlottedRun
from desktop.presenters.plot_marks import Focus, checkpoint_marks, origin
from desktop.workers import Worker, WorkerPool
from tracker import liveness
from tracker.model import PartInfo as PartInfo  # views take the records from here
from tracker.model import RunDetails, RunSummary
from tracker.model import SourceStat as SourceStat

if TYPE_CHECKING:
    from tracker.checkpoints.manager import Deletion, Report
    from tracker.store import Store

SAMPLES = resources_dir() / "samples"
# While an ingest runs, the runs table refreshes at most this often.
REFRESH_MS = 400
# Quitting waits this long for background work to stop (bench/quit.py times the whole quit).
QUIT_WAIT_MS = 150


class AppServices(QObject):
    sig_runs_changed = Signal()
    """Runs were added, edited or deleted: views reload what they show."""
    sig_selection_changed = Signal(list)
    """The selected run ids, in selection order (which sets plot colours)."""
    sig_ingest_started = Signal(list)
    """Paths an ingest was asked for ([] when it re-reads every stored run)."""
    sig_ingest_progress = Signal(int, int, str)
    """done, total, the file being read."""
    sig_ingest_finished = Signal(object)
    """The IngestReport (``cancelled`` set when the user stopped it)."""
    sig_message = Signal(str)
    """A one-line message for the status bar (errors included)."""
    sig_live_ingested = Signal(object)
    """The IngestReport of a quiet ingest of followed logs that grew (see :meth:`ingest`)."""
    sig_database_changed = Signal(str)
    """The app switched databases; the text says which (password hidden)."""
    sig_connection_lost = Signal(str)
    """The database server stopped answering (why, in one line); the local one still works."""
    sig_checkpoints_changed = Signal(int)
    """A run's checkpoints were rescanned or trashed, or the metric ranking them changed."""
    sig_findings_changed = Signal(list)
    """These runs were diagnosed again."""
    sig_focus_requested = Signal(object)
    """Show a finding on the plots: a :class:`Focus` (None: no finding is selected)."""
    sig_sizing_requested = Signal(int)
    """Open the sizing wizard with this run's shape filled in (the wizard connects here)."""
    sig_store_ready = Signal()
    """The database opened (:meth:`open_store`): what needs it starts now."""

    def __init__(self, store: Store | None = None, parent: QObject | None = None,
                 refresh_ms: int = REFRESH_MS, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.store = store
        self.clock = clock  # seconds since the epoch; tests drive it to age running runs
        self.workers = WorkerPool()
        self.selected: list[int] = []
        self._ingest: Worker | None = None
        self._live = False  # the running ingest is a quiet one of followed logs
        self._queued: list[str] = []
        self._generation = 0  # bumped when the database changes: older answers are dropped
        self._probing = False
        self._edits: deque[_Edit] = deque()  # written one at a time, in order
        self._editing = False
        self._stale_after_s = STALE_AFTER_S
        self._stale = QTimer(self, singleShot=True)  # a running run is about to go quiet
        self._stale.timeout.connect(self.sig_runs_changed)
        self._refresh = QTimer(self, singleShot=True, interval=refresh_ms)
        self._refresh.timeout.connect(self.sig_runs_changed)
        self._rankings: dict[int, tuple[str | None, str | None]] = {}

    # ---- Runs

    def load_runs(self, on_done: Callable[[Any], None],
                  prepare: Callable[[list[RunSummary]], Any] | None = None) -> Worker:
        """Read every run's summary (no points) in the background, with its live status.

        ``prepare`` turns the runs into what ``on_done`` takes (a table's rows) on the
        worker as well, so that with thousands of runs the window only swaps them in.
        """
        stale_after_s, store, now = self._stale_after_s, self.store, self.now()

        def read(_worker) -> tuple[Any, float | None]:
            runs = store.runs() if store is not None else []
            soonest = liveness.apply(runs, now, stale_after_s)
            return (runs if prepare is None else prepare(runs)), soonest

        def done(result: tuple[Any, float | None]) -> None:
            self._watch_stale(result[1])
            on_done(result[0])

        return self.workers.start(read, self._current(done), self._failed)

    def run_count(self) -> int:
        return self.store.run_count() if self.store is not None else 0

    def load_extras(self, on_done: Callable[[dict[int, dict[str, Any]]], None]) -> Worker:
        """:meth:`extras` of every run, in the background."""
        return self.workers.start(lambda _w: self.extras(), self._current(on_done), self._failed)

    def extras(self, run_ids: list[int] | None = None) -> dict[int, dict[str, Any]]:
        """Each run's config and stated summary (every run's for None), for query fields
        that read them: call it on a worker (it reads every run's config)."""
        from tracker.db.query import extras, matching_ids

        with self.store.session() as session:
            ids = matching_ids(session, None) if run_ids is None else run_ids
            return extras(session, ids)

    def select(self, run_ids: list[int]) -> None:
        if run_ids != self.selected:
            self.selected = list(run_ids)
            self.sig_selection_changed.emit(self.selected)

    # ---- Ingest

    def ingest(self, paths: Iterable[str | Path], live: bool = False) -> bool:
        """Ingest ``paths`` in the background, after the running ingest if there is one.

        A ``live`` ingest (followed logs that grew) is quiet: no report panel, no new
        selection, only ``sig_live_ingested``. It is never queued: while another ingest
        runs it returns False and the follower asks again at its next look.
        """
        paths = [str(p) for p in paths]
        if live:
            if self.ingesting or not paths or self.store is None:
                return False
            self._start_ingest(lambda: paths, None)
        elif self.store is None:  # read once the database is open
            self._queued += [p for p in paths if p not in self._queued]
        elif self.ingesting:
            self._queued += [p for p in paths if p not in self._queued]
            if not self._live:
                self.sig_message.emit(f"Queued {len(paths)} paths: they are read when this "
                                      "ingest ends")
        elif paths:
            self._start_ingest(lambda: paths, paths)
        return True

    def reload(self) -> None:
        """Re-read every stored run's source: new points are appended, unchanged logs skipped."""
        if self.store is None:
            self.sig_message.emit("The database is still opening")
            return
        if self.ingesting:
            self.sig_message.emit("An ingest is running; reload when it has finished")
            return
        store = self.store
        self._start_ingest(lambda: sorted({r.source_path for r in store.runs()}), [])

    def _start_ingest(self, paths: Callable[[], list[str]], shown: list[str] | None) -> None:
        """Run an ingest of ``paths()`` (worked out in the worker); ``shown`` is [] for "all",
        None for a quiet live ingest."""
        from tracker.ingest import ingest

        self._live, store = shown is None, self.store
        self._ingest = self.workers.start(
            lambda w: ingest(store, paths(), progress=w.report, cancel=w.cancelled),
            self._ingest_done, self._ingest_failed, self._ingest_progress,
        )
        if shown is not None:
            self.sig_ingest_started.emit(shown)

    @property
    def ingesting(self) -> bool:
        return self._ingest is not None

    def cancel_ingest(self) -> None:
        """Stop after the file being read (it is stored whole or not at all), and drop the queue."""
        self._queued = []
        if self._ingest is not None:
            self._ingest.cancel()

    def sample_paths(self) -> list[Path]:
        """The bundled sample runs, one path per run."""
        if not SAMPLES.is_dir():
            return []
        return sorted(p for p in SAMPLES.iterdir()
                      if p.suffix != ".md" and not p.name.startswith((".", "_")))

    def _ingest_progress(self, done: int, total: int, label: str) -> None:
        if not self._live:
            self.sig_ingest_progress.emit(done, total, label)
        if done and not self._refresh.isActive():
            self._refresh.start()

    def _ingest_done(self, report) -> None:
        self._ingest = None
        self._refresh.stop()
        if self._live:
            self.sig_live_ingested.emit(report)
        else:
            self.sig_ingest_finished.emit(report)
        if not self._live or any(r.status in ("ingested", "updated") for r in report.results):
            self.sig_runs_changed.emit()
        if not report.ok and self.remote:
            self.check_connection()
        self._ingest_queued()

    def _ingest_queued(self) -> None:
        queued, self._queued = self._queued, []
        if queued:
            self.ingest(queued)

    def _ingest_failed(self, message: str) -> None:
        from tracker.ingest import FileResult, IngestReport

        self._ingest_done(IngestReport([FileResult("(ingest)", "error", message)]))

    # ---- Series and details

    def load_plot_data(self, run_ids: list[int], metrics: list[str] | None,
                       on_done: Callable[[list[PlottedRun]], None]) -> Worker:
        """:meth:`read_plot_data` in the background."""
        return self.workers.start(lambda w: self.read_plot_data(run_ids, metrics, w.cancelled),
                                  self._current(on_done), self._failed)

    def read_plot_data(self, run_ids: list[int], metrics: list[str] | None = None,
                       cancelled: Callable[[], bool] = lambda: False) -> list[PlottedRun]:
        """The runs' series (all, or ``metrics``) and resume steps, in ``run_ids`` order."""
        runs = {r.id: r for r in self.store.runs(run_ids)}
        out = []
        for run_id in run_ids:
            run = runs.get(run_id)
            if run is None or cancelled():
                continue
            try:
                out.append(self._plotted(run, metrics))
            except LookupError:  # a series or the run itself missing
                if self.store.runs([run_id]):
                    raise
                # An ingest merged the run into another (or it was deleted) while it was read:
                # left out, as the views reload on sig_runs_changed.
        return out

    def _plotted(self, run: RunSummary, metrics: list[str] | None) -> PlottedRun:
        names = [n for n in run.series if metrics is None or n in metrics]
        series = {n: self.store.series(run.id, n) for n in names}
        resumes = [e.step for e in self.store.events(run.id, ["resume"]) if e.step is not None]
        return PlottedRun(run.id, run.name, series, resumes, _tokens_per_step(run),
                          series_version(run), **self._annotations(run.id),
                          colour=run.colour, samples_per_step=run.shape.global_batch,
                          n_gpus=run.shape.n_gpus, source_path=run.source_path)

    def _annotations(self, run_id: int) -> dict[str, Any]:
        """What the plots mark on a run: its checkpoints, findings and the run it resumed."""
        report = self.checkpoints(run_id)
        parent = report.origin.parent_run if report.origin else None
        names = {r.id: r.name for r in self.store.runs([parent])} if parent else {}
        return {"checkpoints": checkpoint_marks(report.checkpoints, report.best, report.latest),
                "findings": self.store.findings(run_id),
                "origin": origin(report.origin, names.get(parent))}

    def configs(self, run_ids: list[int]) -> dict[int, dict[str, Any]]:
        """Each run's config, read in one query; a run gone since the views listed it (an
        ingest merged it into another, or it was deleted) is left out, not an error."""
        if self.store is None or not run_ids:
            return {}
        return {run_id: extra["config"] for run_id, extra in self.extras(run_ids).items()}

    def details(self, run_id: int) -> RunDetails | None:
        """What the Details tab shows of a run; None when it is gone (an ingest merged it into
        another run, or it was deleted, since the views last listed it)."""
        from tracker.store import RunNotFound

        if self.store is None:
            return None
        try:
            details = self.store.details(run_id)
        except RunNotFound:
            return None
        return replace(details, summary=self._with_live([details.summary])[0])

    def events(self, run_id: int) -> list[RunEvent]:
        return self.store.events(run_id)

    def runs(self, run_ids: list[int]) -> list[RunSummary]:
        """Summaries of a few runs, in the order asked (for details and compare)."""
        if self.store is None:
            return []
        found = {r.id: r for r in self._with_live(self.store.runs(run_ids))}
        return [found[i] for i in run_ids if i in found]

    # ---- Edits (each one short transaction in the pool, one after the other, in the order asked;
    #      views refresh on sig_runs_changed, and a failure is said in the status bar)

    def rename(self, run_id: int, name: str) -> None:
        self.edit(lambda store: store.rename(run_id, name.strip()), "rename the run")

    def set_tags(self, run_id: int, tags: Iterable[str]) -> None:
        tags = list(tags)
        self.edit(lambda store: store.set_tags(run_id, tags), "save the tags")

    def add_tags(self, run_ids: Iterable[int], tags: Iterable[str]) -> None:
        ids, tags = list(run_ids), list(tags)

        def add(store: Store) -> None:
            for run in store.runs(ids):
                store.set_tags(run.id, [*run.tags, *tags])

        self.edit(add, "add the tags")

    def set_notes(self, run_id: int, notes: str) -> None:
        self.edit(lambda store: store.set_notes(run_id, notes), "save the notes")

    def set_colour(self, run_id: int, colour: str) -> None:
        """The run's colour in every view, as the user chose it."""
        self.edit(lambda store: store.set_colour(run_id, colour), "set the colour")

    def set_excluded_from_fit(self, run_ids: Iterable[int], excluded: bool) -> None:
        """Keep runs out of the memory model's calibration (or let them back in)."""
        ids = list(run_ids)

        def change(store: Store) -> None:
            for run_id in ids:
                store.set_exclude_from_fit(run_id, excluded)

        self.edit(change, "change the calibration's runs")

    def merge_runs(self, run_ids: list[int]) -> None:
        """Make the runs one job: the first takes the others in as parts (their logs and
        metrics kept, each with its source)."""
        def done(notes: list[str]) -> None:
            self.sig_message.emit("; ".join(notes))
            self.select(run_ids[:1])

        self.edit(lambda store: store.merge_runs(run_ids[0], run_ids[1:]), "merge the runs",
                  done)

    def split_part(self, part_id: int) -> None:
        """Make a log that joined a run a run of its own again (its log is read again)."""
        self.edit(lambda store: store.split_part(part_id), "split the run",
                  lambda run_id: self.sig_message.emit(f"Split off as run {run_id}"))

    def set_shape_field(self, run_id: int, name: str, value: Any) -> None:
        self.edit(lambda store: store.set_shape_field(run_id, name, value), f"save {name}")

    def delete_runs(self, run_ids: Iterable[int]) -> None:
        """Remove runs from the database (never the user's files)."""
        ids = list(run_ids)
        self.selected = [i for i in self.selected if i not in ids]
        self.sig_selection_changed.emit(self.selected)
        self.edit(lambda store: store.delete_runs(ids), "delete the runs")

    def edit(self, change: Callable[[Store], Any], what: str,
             on_done: Callable[[Any], None] | None = None,
             on_error: Callable[[str], None] | None = None, runs_changed: bool = True) -> None:
        """Run ``change(store)`` in the pool after the edits asked before it; then
        ``on_done(result)`` and ``sig_runs_changed`` (unless it changes no run), or on failure
        ``on_error(why)`` (by default "Could not {what}: why" in the status bar)."""
        if on_error is None:
            on_error = lambda why: self._failed(f"Could not {what}: {why}")  # noqa: E731
        self._edits.append(_Edit(change, self.store, on_done, on_error, runs_changed))
        self._next_edit()

    @property
    def editing(self) -> bool:
        """An edit is being written or waits for one that is."""
        return self._editing or bool(self._edits)

    def _next_edit(self) -> None:
        if self._editing or not self._edits or self.store is None:
            return
        edit, self._editing = self._edits.popleft(), True
        store = edit.store if edit.store is not None else self.store  # asked on, even if switched

        def done(result: Any) -> None:
            self._editing = False
            if edit.on_done is not None:
                edit.on_done(result)
            if edit.runs_changed:
                self.sig_runs_changed.emit()
            self._next_edit()

        def failed(message: str) -> None:
            self._editing = False
            edit.on_error(message)
            if edit.runs_changed:
                self.sig_runs_changed.emit()  # show what is stored, not what was typed
            self._next_edit()

        self.workers.start(lambda _w: edit.change(store), done, failed)

    # ---- Checkpoints (the answers come from stored rows; only a rescan reads the disk)

    def checkpoints(self, run_id: int, from_best: bool = False) -> Report:
        """The run's checkpoint report (best, latest, resume point) under its chosen ranking."""
        from tracker.checkpoints import manager

        return manager.report(self.store, run_id, *self.ranking(run_id), from_best=from_best)

    def load_checkpoints(self, run_id: int, on_done: Callable[[Report], None],
                         from_best: bool = False) -> Worker:
        """:meth:`checkpoints` in the background."""
        return self.workers.start(lambda _w: self.checkpoints(run_id, from_best), on_done,
                                  self.sig_message.emit)

    def ranking(self, run_id: int) -> tuple[str | None, str | None]:
        """The metric and mode the user ranks this run's checkpoints by (None: the default)."""
        return self._rankings.get(run_id, (None, None))

    def set_ranking(self, run_id: int, metric: str | None, mode: str | None) -> None:
        self._rankings[run_id] = (metric, mode)
        self.sig_checkpoints_changed.emit(run_id)

    def rescan_checkpoints(self, run_id: int) -> Worker:
        """Look at the run's folder again, in the background (inspecting files takes a while)."""
        from tracker.checkpoints import manager

        def done(_found) -> None:
            self.sig_message.emit("Checkpoints rescanned")
            self.sig_checkpoints_changed.emit(run_id)

        return self.workers.start(lambda _w: manager.rescan(self.store, run_id), done,
                                  self.sig_message.emit)

    def plan_retention(self, run_id: int, keep_best: int, keep_latest: int) -> RetentionPlan:
        """What keeping the best k and the latest n would delete (raises RetentionError)."""
        from tracker.checkpoints import manager

        return manager.plan_retention(self.store, run_id, keep_best, keep_latest,
                                      *self.ranking(run_id))[1]

    def trash_checkpoints(self, run_id: int, plan: RetentionPlan,
                          on_done: Callable[[Deletion], None]) -> Worker:
        """Move what ``plan`` drops to the system trash: call only after the user confirmed."""
        from tracker.checkpoints import manager

        def done(result) -> None:
            on_done(result)
            self.sig_checkpoints_changed.emit(run_id)

        return self.workers.start(
            lambda _w: manager.delete(self.store, run_id, plan, confirmed=True), done,
            self.sig_message.emit)

    # ---- Diagnostics

    def load_findings(self, run_ids: list[int],
                      on_done: Callable[[dict[int, list[Finding]]], None]) -> Worker:
        """The runs' stored findings, by run id in the order asked, in the background."""
        return self.workers.start(lambda _w: {i: self.store.findings(i) for i in run_ids},
                                  on_done, self.sig_message.emit)

    def rediagnose(self, run_ids: list[int]) -> Worker:
        """Run every diagnostic rule again on these runs (after an upgrade or a shape edit)."""
        def done(found: dict[int, list[Finding]]) -> None:
            count = sum(len(f) for f in found.values())
            self.sig_message.emit(f"Diagnosed {len(found)} run{'s' * (len(found) != 1)}: "
                                  f"{count} finding{'s' * (count != 1)}")
            self.sig_findings_changed.emit(list(found))
            self.sig_runs_changed.emit()

        return self.workers.start(lambda _w: self.store.diagnose(run_ids), done,
                                  self.sig_message.emit)

    def focus(self, focus: Focus | None) -> None:
        """Show a finding on the plots (zoomed to its steps), or none."""
        self.sig_focus_requested.emit(focus)

    def sizing_available(self) -> bool:
        """Whether a sizing wizard listens to :attr:`sig_sizing_requested`."""
        return self.isSignalConnected(QMetaMethod.fromSignal(self.sig_sizing_requested))

    def request_sizing(self, run_id: int) -> bool:
        """Ask the sizing wizard to open with this run's shape; False when no wizard listens."""
        if not self.sizing_available():
            return False
        self.sig_sizing_requested.emit(run_id)
        return True

    # ---- Live status and the database in use

    def now(self) -> datetime:
        """The services' clock, as an aware datetime."""
        return datetime.fromtimestamp(self.clock(), UTC)

    def set_stale_after(self, seconds: float) -> None:
        """How long a running run may stay silent before it is shown as "crashed?"."""
        if seconds != self._stale_after_s:
            self._stale_after_s = seconds
            self.sig_runs_changed.emit()

    def _with_live(self, runs: list[RunSummary]) -> list[RunSummary]:
        """Runs with the status to show now."""
        self._watch_stale(liveness.apply(runs, self.now(), self._stale_after_s))
        return runs

    def _watch_stale(self, soonest: float | None) -> None:
        """Refresh the runs when the first running one goes quiet, in ``soonest`` seconds."""
        if soonest is not None and QThread.currentThread() is self.thread():
            if not self._stale.isActive() or self._stale.remainingTime() > soonest * 1000:
                self._stale.start(max(0, int(soonest * 1000)) + 50)

    @property
    def ready(self) -> bool:
        """The database is open."""
        return self.store is not None

    def open_store(self, open_: Callable[[], Store],
                   on_error: Callable[[str], None]) -> Worker:
        """Open the database in the pool (importing the ORM and checking the schema take
        a while): ``sig_store_ready`` when it is open, then queued ingests start."""
        def opened(store: Store) -> None:
            self.store = store
            self.sig_store_ready.emit()
            self.sig_runs_changed.emit()
            self._next_edit()
            self._ingest_queued()

        return self.workers.start(lambda _w: open_(), opened, on_error)

    @property
    def display_url(self) -> str:
        """Where the database is, password hidden ("" while it opens)."""
        return self.store.display_url if self.store is not None else ""

    @property
    def on_default_database(self) -> bool:
        """The app is on the local database it opens by default (not one ``--db`` named)."""
        from tracker.db.engine import default_url

        return self.store is not None and self.store.url == default_url()

    @property
    def remote(self) -> bool:
        """The database is a server (a team tracker), which a network can take away."""
        return self.store is not None and not self.store.url.startswith("sqlite")

    def switch_store(self, store: Store, label: str) -> bool:
        """Work on ``store`` from now on (the caller keeps and closes the other); not mid-ingest."""
        if self.ingesting:
            self.sig_message.emit("An ingest is running; switch databases when it has finished")
            return False
        self.store = store
        self._generation += 1
        self.selected = []
        self.sig_database_changed.emit(label)
        self.sig_selection_changed.emit([])
        self.sig_runs_changed.emit()
        return True

    def check_connection(self) -> None:
        """Ask the server whether it still answers; ``sig_connection_lost`` when it does not."""
        if self._probing:
            return
        self._probing = True

        def failed(message: str) -> None:
            self._probing = False
            self.sig_connection_lost.emit(message)

        self.workers.start(lambda _w: self.store.run_count(),
                           lambda _count: setattr(self, "_probing", False), failed)

    def _current(self, on_done: Callable[[Any], None]) -> Callable[[Any], None]:
        """``on_done``, unless the database changed while the answer was being read."""
        generation = self._generation
        return lambda value: on_done(value) if generation == self._generation else None

    def _failed(self, message: str) -> None:
        self.sig_message.emit(message)
        if self.remote:
            self.check_connection()

    def shutdown(self, wait_ms: int = QUIT_WAIT_MS) -> None:
        """Ask background work to stop (an ingest stops between files), give it ``wait_ms``,
        and close the database. What is still reading a file then is left to the exit: its
        file's transaction is not committed, so nothing of it is stored."""
        self._generation += 1  # answers still on their way are dropped, not drawn
        self.workers.shutdown(wait_ms)
        if self.store is not None:
            self.store.close()


@dataclass(frozen=True)
class _Edit:
    change: Callable[[Store], Any]
    store: Store | None  # None: asked while the database was opening
    on_done: Callable[[Any], None] | None
    on_error: Callable[[str], None]
    runs_changed: bool


def series_version(run: RunSummary) -> tuple:
    """What plotted data depends on: the run's name, colour and each series' length and end."""
    return (run.name, run.colour,
            tuple(sorted((n, s.count, s.last_step) for n, s in run.series.items())))


def _tokens_per_step(run: RunSummary) -> float | None:
    shape = run.shape
    if shape.global_batch and shape.seq_len:
        return float(shape.global_batch * shape.seq_len)
    return None
