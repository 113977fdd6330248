"""Desktop app speed: time to first window, and time to plot 1,000,000 points x 4 runs.

1. ``headroom gui --smoke`` in a fresh interpreter, REPEAT times: the app's own
   "first paint" figure (from interpreter start of the app code to the window's
   first paint event) and the whole process's wall time (Python start-up and
   exit included), medians printed.
2. Four runs of 1,000,000 loss points each are stored in a temporary database;
   the plots panel is asked to show them, and the stages are timed: store ->
   arrays (reading the four series), arrays -> curves (x mapping and smoothing),
   curves -> first paint (handing the arrays to pyqtgraph and painting the
   panel), for smoothing off and on (TensorBoard's 0.6). Then a pan across the
   data (ten repaints at shifted ranges) shows what downsampling costs per frame.
3. A database of TABLE_RUNS runs (five short series each): reading their summaries and
   making the table's rows (the app does both on a worker), then on the GUI thread
   swapping the rows into the runs table model, sorting by a metric column and filtering.

Run headless or on a display::

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POINTS = 1_000_000
RUNS = 4
TABLE_RUNS = 5000


def first_window(repeat: int) -> None:
    paints, walls = [], []
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "desktop.launcher", "gui", "--smoke"],
                              capture_output=True, text=True, cwd=ROOT, env=env, check=True)
        walls.append(time.perf_counter() - started)
        paints.append(float(done.stdout.split()[3]))
    print(f"first window ({repeat} launches, median): first paint {statistics.median(paints):.2f} s"
          f" after the app code starts; whole process {statistics.median(walls):.2f} s")


def _store_runs(store, points: int) -> list[int]:
    from core.runlog import RunLog
    from tracker.db import runs as run_store

    ids = []
    rng = np.random.default_rng(0)
    steps = np.arange(points)
    for i in range(RUNS):
        loss = 2.0 + 3.0 / (1 + steps / 20_000) + 0.05 * rng.standard_normal(points) + 0.1 * i
        log = RunLog(format="bench", name=f"run-{i}")
        log.add_series("loss", steps, loss, wall_time=1.7e9 + steps * 0.5)
        with store.session() as s:
            run_id, _ = run_store.save(s, log, f"/bench/{i}", f"bench-{i}", [], None)
        ids.append(run_id)
    return ids


def plot_runs(smoothing: float, points: int = POINTS, report: bool = True) -> None:
    from desktop.app import make_app
    from desktop.presenters import plot_data
    from desktop.services import AppServices
    from desktop.settings import Settings
    from desktop.views.plots_panel import PlotsPanel
    from tracker.store import Store

    app = make_app()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "bench.db"))
        ids = _store_runs(store, points)
        services = AppServices(store)
        panel = PlotsPanel(services, Settings(Path(tmp) / "settings.ini"))
        panel.smooth_slider.setValue(round(smoothing * 1000))
        panel.resize(1200, 800)
        panel.show()
        app.processEvents()

        t0 = time.perf_counter()
        runs = services.read_plot_data(ids, ["loss"])
        t1 = time.perf_counter()
        spec = plot_data.build(runs, ["loss"], "step", smoothing)
        t2 = time.perf_counter()
        services.selected = ids
        panel.draw(spec)
        panel.graphics.viewport().repaint()
        t3 = time.perf_counter()
        pan = _pan(panel, points)
        if report:
            print(f"plot {RUNS} x {points:,} points, smoothing {smoothing}: store -> arrays "
                  f"{t1 - t0:.3f} s, arrays -> curves {t2 - t1:.3f} s, curves -> first paint "
                  f"{t3 - t2:.3f} s (total {t3 - t0:.2f} s); pan frame median {pan * 1000:.0f} ms")
        panel.close()
        services.shutdown()


def _pan(panel, points: int) -> float:
    """Median time of a repaint after shifting the x range (what dragging the plot does)."""
    plot = panel.panels[0].plot
    frames = []
    for i in range(10):
        plot.setXRange(i * points / 20, (i * points / 20) + points * 0.3, padding=0)
        started = time.perf_counter()
        panel.graphics.viewport().repaint()
        frames.append(time.perf_counter() - started)
    return statistics.median(frames)


def runs_table(count: int) -> None:
    from core.runlog import RunLog
    from desktop.app import make_app
    from desktop.models.run_table_model import RunFilterProxy, RunTableModel
    from desktop.presenters.run_columns import COLUMN_INDEX, make_rows
    from tracker.db import runs as run_store
    from tracker.store import Store

    make_app()
    steps = np.arange(10)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "table.db"))
        with store.session() as s:
            for i in range(count):
                log = RunLog(format="bench", name=f"run-{i:05d}")
                for metric in ("loss", "eval_loss", "lr", "mem_peak_gib", "tokens_per_s"):
                    log.add_series(metric, steps, np.linspace(3, 1, 10) + i % 17)
                run_store.save(s, log, f"/bench/{i}", f"table-{i}", [], None)
        t0 = time.perf_counter()
        runs = store.runs()
        rows = make_rows(runs)
        t1 = time.perf_counter()
        model, proxy = RunTableModel(), RunFilterProxy()
        proxy.setSourceModel(model)
        model.set_rows(rows)
        t2 = time.perf_counter()
        proxy.sort(COLUMN_INDEX["last_loss"])
        t3 = time.perf_counter()
        proxy.set_filters("run-04", None, None)
        t4 = time.perf_counter()
        print(f"runs table, {count:,} runs: summaries and rows (on a worker) {t1 - t0:.2f} s, "
              f"then on the GUI thread: model {(t2 - t1) * 1000:.0f} ms, "
              f"sort {(t3 - t2) * 1000:.0f} ms, filter {(t4 - t3) * 1000:.0f} ms "
              f"({proxy.rowCount()} shown)")
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="launches to time (default 5)")
    parser.add_argument("--runs", type=int, default=TABLE_RUNS,
                        help=f"runs in the table benchmark (default {TABLE_RUNS:,})")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as home:
        os.environ["HEADROOM_HOME"] = home  # never the user's database or settings
        first_window(args.repeat)
        plot_runs(0.6, points=10_000, report=False)  # imports and first-use costs, not timed
        for smoothing in (0.0, 0.6):
            plot_runs(smoothing)
        runs_table(args.runs)


if __name__ == "__main__":
    main()
