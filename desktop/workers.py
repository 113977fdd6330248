"""Background work: a job runs in the thread pool and reports back through Qt signals.

Gotchas encoded once, here: a ``QRunnable`` is not a ``QObject``, so its
signals live on a separate :class:`WorkerSignals` created in the GUI thread
(their slots then run in the GUI thread); the pool keeps a Python reference to
each worker until it has finished, or its signals could be collected mid-run;
jobs never touch widgets, and open their own database sessions (SQLite
connections belong to one thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)


class WorkerSignals(QObject):
    progress = Signal(int, int, str)
    """done, total, what is being worked on."""
    result = Signal(object)
    """The job's return value."""
    error = Signal(str)
    """A one-line description of what went wrong."""
    finished = Signal()
    """Sent last, after result or error, also when cancelled."""


class Worker(QRunnable):
    """Runs ``job(worker)``; the job may call :meth:`report` and poll :meth:`cancelled`."""

    def __init__(self, job: Callable[[Worker], Any]) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.signals = WorkerSignals()
        self._job = job
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def report(self, done: int, total: int, label: str = "") -> None:
        self.signals.progress.emit(done, total, label)

    def run(self) -> None:
        try:
            value = self._job(self)
        except Exception as err:  # reported to the user, never a silent thread death
            log.exception("background job failed")
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            self.signals.error.emit(first)
        else:
            self.signals.result.emit(value)
        finally:
            self.signals.finished.emit()


class WorkerPool:
    """A thread pool that keeps each worker alive until it has finished."""

    def __init__(self, pool: QThreadPool | None = None) -> None:
        self.pool = pool or QThreadPool()
        self._running: set[Worker] = set()

    def start(
        self,
        job: Callable[[Worker], Any],
        on_result: Callable[[Any], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_progress: Callable[[int, int, str], None] | None = None,
    ) -> Worker:
        """Run ``job`` in the pool; callbacks are connected before it starts, so none is missed."""
        worker = Worker(job)
        if on_progress is not None:
            worker.signals.progress.connect(on_progress)
        if on_result is not None:
            worker.signals.result.connect(on_result)
        if on_error is not None:
            worker.signals.error.connect(on_error)
        worker.signals.finished.connect(lambda: self._running.discard(worker))
        self._running.add(worker)
        self.pool.start(worker)
        return worker

    @property
    def busy(self) -> bool:
        return bool(self._running)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Ask every worker to stop and wait for them; False if some did not stop in time."""
        for worker in list(self._running):
            worker.cancel()
        return self.pool.waitForDone(timeout_ms)
