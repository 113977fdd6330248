"""The sizing wizard's and calibration view's door to the tracker, beside :class:`AppServices`.

One per app, built by the composition root (desktop/composition.py), so the
wizard, the calibration view and the scatter plots share its cache. The
calibration fit (leave-one-out over every stored run with a peak) is
computed once in the pool and kept; when runs change it is refreshed in the
background, one fit at a time (changes during a fit queue one more), and
``sig_calibration_changed`` hands every view the new summary. Counting a
config's parameters on the meta device and planning also run in the pool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.presenters.calibration_view import Summary, summarise
from desktop.workers import Worker

if TYPE_CHECKING:  # the memory model and planner load when first used, after the window shows
    from core.gpus import GPU
    from core.memory import ModelSpec, Setup
    from core.planner import Plan
    from core.shape import RunShape
    from core.sizing import CardAnswer, Sizer
    from desktop.services import AppServices
    from tracker.store import Store

# Runs change every few hundred milliseconds while an ingest runs, and a leave-one-out fit
# costs about 2 s per 100 runs (one refit per run): refit once the changes pause this long.
REFIT_AFTER_MS = 1500


@dataclass(frozen=True)
class RunInputs:
    """A recorded run as the memory model's inputs, for "Size a run like this…"."""

    run_id: int
    name: str
    spec: ModelSpec
    setup: Setup
    shape: RunShape


class SizingServices(QObject):
    sig_calibration_changed = Signal(object)
    """A fresh fit of the stored runs (a ``calibration_view.Summary``)."""

    def __init__(self, services: AppServices) -> None:
        super().__init__(services)
        self._services = services
        self.summary: Summary | None = None
        self._fitting: Worker | None = None
        self._stale = True
        self._again = False
        self._refit_now = False  # the next change of runs is the user's exclusion
        self._asked = False  # a view wants the fit: keep it fresh
        self._later = QTimer(self, singleShot=True, interval=REFIT_AFTER_MS)
        self._later.timeout.connect(self.refit)
        services.sig_runs_changed.connect(self._on_runs_changed)

    # ---- Calibration

    def calibration(self) -> Summary | None:
        """The latest fit; starts one when none is current (the signal says when it is ready)."""
        if self._stale:
            self.refit()
        return self.summary

    def refit(self) -> None:
        self._asked = True
        if self._fitting is not None:
            self._again = True
            return
        if not self._services.ready:
            return  # fitted when the database opens (the runs change then)
        self._stale = False
        store = self._services.store
        self._fitting = self._services.workers.start(
            lambda _w: fit_store(store), self._on_fitted, self._on_fit_failed)

    def set_excluded(self, run_ids: list[int], excluded: bool) -> None:
        """Keep runs out of the fit (or let them back in); persisted in the store, then fitted
        again at once (the user is waiting for this one)."""
        self._services.set_excluded_from_fit(run_ids, excluded)
        self._refit_now = True

    def _on_runs_changed(self) -> None:
        self._stale = True
        if self._refit_now:
            self._refit_now = False
            self._later.stop()
            self.refit()
        elif self._asked:
            self._later.start()  # someone has asked for it (maybe before the store opened)

    def _on_fitted(self, summary: Summary) -> None:
        self._fitting = None
        self.summary = summary
        self.sig_calibration_changed.emit(summary)
        if self._again:
            self._again = False
            self.refit()

    def _on_fit_failed(self, message: str) -> None:
        self._fitting = None
        self._services.sig_message.emit(f"Calibration failed: {message}")

    # ---- Models and plans

    def load_sizable_runs(self, on_done: Callable[[list[RunInputs]], None]) -> Worker:
        """Every stored run whose shape the memory model can use, the latest ingested first."""
        store = self._services.store
        return self._services.workers.start(lambda _w: sizable_runs(store), on_done,
                                            self._services.sig_message.emit)

    def run_inputs(self, run_id: int) -> RunInputs:
        """One run's inputs (raises ValueError with a one-line reason when its shape is lacking)."""
        from core.models import ModelError

        runs = self._services.runs([run_id])
        if not runs:
            raise ModelError(f"run {run_id} is no longer in the database")
        return _inputs(runs[0].id, runs[0].name, runs[0].shape)

    def count_parameters(self, path: Path, on_done: Callable[[ModelSpec], None],
                         on_error: Callable[[str], None]) -> Worker:
        """A config.json's model with its exact count (built on torch's meta device)."""
        from core.models import from_config_file

        return self._services.workers.start(lambda _w: from_config_file(path), on_done, on_error)

    def plan(self, sizer: Sizer, setup: Setup, gpus: list[GPU], max_gpus: int | None,
             on_done: Callable[[list[Plan]], None], on_error: Callable[[str], None]) -> Worker:
        """Plans in the pool; ``max_gpus`` None: as many GPUs as the job needs."""
        return self._services.workers.start(lambda _w: sizer.plans(setup, gpus, max_gpus),
                                            on_done, on_error)

    def fit_to_card(self, sizer: Sizer, setup: Setup, gpu: GPU, n_gpus: int,
                    on_done: Callable[[CardAnswer], None],
                    on_error: Callable[[str], None]) -> Worker:
        """What the user's cards can run, or the smallest change that fits, in the pool."""
        return self._services.workers.start(lambda _w: sizer.fit_to_card(setup, gpu, n_gpus),
                                            on_done, on_error)

    def simulate(self, spec: ModelSpec, setup: Setup, on_done: Callable[[object], None],
                 on_error: Callable[[str], None],
                 on_progress: Callable[[int, int, str], None]) -> Worker:
        """One step of the model's own code on fake tensors; ``None`` when cancelled."""
        return self._services.workers.start(lambda w: simulate_step(spec, setup, w), on_done,
                                            on_error, on_progress)


def simulate_step(spec: ModelSpec, setup: Setup, worker: Worker):
    """The simulated step, reporting progress; ``None`` if the worker was cancelled."""
    from tracker.simulate import SimulationCancelled, simulate

    try:
        return simulate(spec, setup, progress=worker.report, cancelled=worker.cancelled)
    except SimulationCancelled:
        return None


def fit_store(store: Store) -> Summary:
    """The leave-one-out fit of the store's runs, summarised for the views."""
    from tracker.calibration import NO_PEAK, calibrate

    calibration, collected = calibrate(store)
    listed = [i for i, why in collected.skipped.items() if why != NO_PEAK]
    names = {r.id: r.name for r in store.runs(listed)} if listed else {}
    names.update({s.run_id: s.name for s in calibration.samples})
    return summarise(calibration, collected.skipped, names)


def sizable_runs(store: Store) -> list[RunInputs]:
    out = []
    for run in sorted(store.runs(), key=lambda r: r.id, reverse=True):
        try:
            out.append(_inputs(run.id, run.name, run.shape))
        except ValueError:  # the shape says too little, or contradicts itself
            continue
    return out


def _inputs(run_id: int, name: str, shape: RunShape) -> RunInputs:
    from core.memory import SetupError, check
    from core.memory.from_shape import ShapeIncomplete, inputs_from_shape
    from core.models import ModelError

    try:
        spec, setup, _ = inputs_from_shape(shape)
        check(spec, setup)
    except (ShapeIncomplete, SetupError, ModelError) as err:
        raise ModelError(f"{name}: {err}") from None
    return RunInputs(run_id, name, spec, setup, shape)
