"""The app's one door to the tracker: owns the store and the worker pool, speaks in signals.

Views take an :class:`AppServices`, call one method per user action and
connect ``sig_*`` signals to their slots; they never call the tracker, and
never each other. Work that reads many files or points runs in the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from core.runlog import RunEvent
from desktop.presenters.plot_data import RunData
from desktop.workers import Worker, WorkerPool
from tracker.db.runs import RunSummary, SourceStat
from tracker.store import Store

SAMPLES = Path(__file__).resolve().parents[1] / "resources" / "samples"
# While an ingest runs, the runs table refreshes at most this often.
REFRESH_MS = 400


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

    def __init__(self, store: Store, parent: QObject | None = None,
                 refresh_ms: int = REFRESH_MS) -> None:
        super().__init__(parent)
        self.store = store
        self.workers = WorkerPool()
        self.selected: list[int] = []
        self._ingest: Worker | None = None
        self._queued: list[str] = []
        self._refresh = QTimer(self, singleShot=True, interval=refresh_ms)
        self._refresh.timeout.connect(self.sig_runs_changed)

    # ---- Runs

    def load_runs(self, on_done: Callable[[list[RunSummary]], None]) -> Worker:
        """Read every run's summary (no points) in the background."""
        return self.workers.start(lambda _w: self.store.runs(), on_done, self.sig_message.emit)

    def run_count(self) -> int:
        return self.store.run_count()

    def select(self, run_ids: list[int]) -> None:
        if run_ids != self.selected:
            self.selected = list(run_ids)
            self.sig_selection_changed.emit(self.selected)

    # ---- Ingest

    def ingest(self, paths: Iterable[str | Path]) -> None:
        """Ingest ``paths`` in the background, after the running ingest if there is one."""
        paths = [str(p) for p in paths]
        if self.ingesting:
            self._queued += [p for p in paths if p not in self._queued]
            self.sig_message.emit(f"Queued {len(paths)} paths: they are read when this ingest ends")
        elif paths:
            self._start_ingest(lambda: paths, paths)

    def reload(self) -> None:
        """Re-read every stored run's source: new points are appended, unchanged logs skipped."""
        if self.ingesting:
            self.sig_message.emit("An ingest is running; reload when it has finished")
            return
        self._start_ingest(lambda: sorted({r.source_path for r in self.store.runs()}), [])

    def _start_ingest(self, paths: Callable[[], list[str]], shown: list[str]) -> None:
        """Run an ingest of ``paths()`` (worked out in the worker); ``shown`` is [] for "all"."""
        from tracker.ingest import ingest

        self._ingest = self.workers.start(
            lambda w: ingest(self.store, paths(), progress=w.report, cancel=w.cancelled),
            self._ingest_done, self._ingest_failed, self._ingest_progress,
        )
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
        self.sig_ingest_progress.emit(done, total, label)
        if done and not self._refresh.isActive():
            self._refresh.start()

    def _ingest_done(self, report) -> None:
        self._ingest = None
        self._refresh.stop()
        self.sig_ingest_finished.emit(report)
        self.sig_runs_changed.emit()
        queued, self._queued = self._queued, []
        if queued:
            self.ingest(queued)

    def _ingest_failed(self, message: str) -> None:
        from tracker.ingest import FileResult, IngestReport

        self._ingest_done(IngestReport([FileResult("(ingest)", "error", message)]))

    # ---- Series and details

    def load_plot_data(self, run_ids: list[int], metrics: list[str] | None,
                       on_done: Callable[[list[RunData]], None]) -> Worker:
        """:meth:`read_plot_data` in the background."""
        return self.workers.start(lambda w: self.read_plot_data(run_ids, metrics, w.cancelled),
                                  on_done, self.sig_message.emit)

    def read_plot_data(self, run_ids: list[int], metrics: list[str] | None = None,
                       cancelled: Callable[[], bool] = lambda: False) -> list[RunData]:
        """The runs' series (all, or ``metrics``) and resume steps, in ``run_ids`` order."""
        runs = {r.id: r for r in self.store.runs(run_ids)}
        out = []
        for run_id in run_ids:
            run = runs.get(run_id)
            if run is None or cancelled():
                continue
            names = [n for n in run.series if metrics is None or n in metrics]
            series = {n: self.store.series(run_id, n) for n in names}
            resumes = [e.step for e in self.store.events(run_id, ["resume"]) if e.step is not None]
            out.append(RunData(run_id, run.name, series, resumes, _tokens_per_step(run),
                               series_version(run)))
        return out

    def config(self, run_id: int) -> dict[str, Any]:
        return self.store.config(run_id)

    def sources(self, run_id: int) -> list[SourceStat]:
        return self.store.sources(run_id)

    def final_values(self, run_id: int) -> dict[str, Any]:
        return self.store.final_values(run_id)

    def events(self, run_id: int) -> list[RunEvent]:
        return self.store.events(run_id)

    def runs(self, run_ids: list[int]) -> list[RunSummary]:
        """Summaries of a few runs, in the order asked (for details and compare)."""
        found = {r.id: r for r in self.store.runs(run_ids)}
        return [found[i] for i in run_ids if i in found]

    # ---- Edits (each one short transaction; views refresh on sig_runs_changed)

    def rename(self, run_id: int, name: str) -> None:
        self._edit(lambda: self.store.rename(run_id, name.strip()))

    def set_tags(self, run_id: int, tags: Iterable[str]) -> None:
        self._edit(lambda: self.store.set_tags(run_id, tags))

    def add_tags(self, run_ids: Iterable[int], tags: Iterable[str]) -> None:
        tags = list(tags)
        for run in self.runs(list(run_ids)):
            self.store.set_tags(run.id, [*run.tags, *tags])
        self.sig_runs_changed.emit()

    def set_notes(self, run_id: int, notes: str) -> None:
        self._edit(lambda: self.store.set_notes(run_id, notes))

    def set_shape_field(self, run_id: int, name: str, value: Any) -> None:
        self._edit(lambda: self.store.set_shape_field(run_id, name, value))

    def delete_runs(self, run_ids: Iterable[int]) -> int:
        """Remove runs from the database (never the user's files)."""
        ids = list(run_ids)
        deleted = self.store.delete_runs(ids)
        self.selected = [i for i in self.selected if i not in ids]
        self.sig_runs_changed.emit()
        self.sig_selection_changed.emit(self.selected)
        return deleted

    def _edit(self, change: Callable[[], None]) -> None:
        change()
        self.sig_runs_changed.emit()

    def shutdown(self) -> None:
        """Stop background work (an ingest stops between files) and close the database."""
        self.workers.shutdown()
        self.store.close()


def series_version(run: RunSummary) -> tuple:
    """What plotted data depends on: the run's name and each series' length and end."""
    return (run.name, tuple(sorted((n, s.count, s.last_step) for n, s in run.series.items())))


def _tokens_per_step(run: RunSummary) -> float | None:
    shape = run.shape
    if shape.global_batch and shape.seq_len:
        return float(shape.global_batch * shape.seq_len)
    return None
