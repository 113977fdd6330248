"""Desktop app speed: the first window, and 4 x 1,000,000-point plots beside bare pyqtgraph.

1. ``headroom gui --smoke --db DB`` in a fresh interpreter, REPEAT times after one
   untimed launch (so Python's bytecode caches are written, as pip writes them at
   install); DB holds the bundled sample runs at the current schema, as on every
   launch after the first. Printed: the app's own "first paint" figure (from the
   start of the app code, ``run_app``, to the window's first paint event), when
   its database was open (the window paints first, saying it is opening it), and
   the whole process's wall time, medians.
2. Four runs of 1,000,000 loss points each are stored in a temporary database and
   the plots panel shows them; the stages are timed: store -> arrays (reading the
   four series), arrays -> curves (x mapping and smoothing), curves -> first paint
   (handing the arrays to pyqtgraph and painting the panel), for smoothing off and
   on (TensorBoard's 0.6). Then the same curves are built again, as a change of
   selection or panels does (smoothed curves come from the cache), and the view is
   panned (the x range shifted, 10 repaints) and zoomed (the x range narrowed,
   10 repaints): median wall and CPU milliseconds per frame.
3. Bare pyqtgraph, the same arrays (raw and smoothed curves when smoothing is on)
   in a widget of the same size: peak downsampling, clip to view and otherwise
   pyqtgraph's defaults, panned and zoomed the same way.
4. A database of TABLE_RUNS runs (five short series each): reading their summaries and
   making the table's rows (the app does both on a worker), then on the GUI thread
   swapping the rows into the runs table model, sorting by a metric column and filtering.

Run headless or on a display (``xvfb-run -a`` gives a real X server)::

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
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POINTS = 1_000_000
RUNS = 4
TABLE_RUNS = 5000
WIDTH, HEIGHT = 1200, 800
FRAMES = 10


def first_window(repeat: int) -> None:
    from core.resources import resources_dir

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "launch.db")
        launcher = [sys.executable, "-m", "desktop.launcher"]
        subprocess.run([*launcher, "ingest", str(resources_dir() / "samples"), "--db", db],
                       cwd=ROOT, env=env, check=True, capture_output=True)
        paints, opened, walls = [], [], []
        for i in range(repeat + 1):
            started = time.perf_counter()
            done = subprocess.run([*launcher, "gui", "--smoke", "--db", db], capture_output=True,
                                  text=True, cwd=ROOT, env=env, check=True)
            if i:  # the first launch writes the bytecode caches
                walls.append(time.perf_counter() - started)
                words = done.stdout.split()  # first paint after P s; database open after D s
                paints.append(float(words[3]))
                opened.append(float(words[8]))
    print(f"first window ({repeat} launches, median): first paint {statistics.median(paints):.2f} s"
          f" after the app code starts, database open (the runs can load) "
          f"{statistics.median(opened):.2f} s; whole process {statistics.median(walls):.2f} s")


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


def _frame_ms(set_range: Callable[[int], None], repaint: Callable[[], None]) -> tuple[float, float]:
    """Median wall and CPU milliseconds of a repaint after each of FRAMES range changes."""
    walls, cpus = [], []
    for i in range(FRAMES):
        set_range(i)
        wall, cpu = time.perf_counter(), time.process_time()
        repaint()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def pan_and_zoom(plot, repaint: Callable[[], None], points: int) -> str:
    """Pan (shift a 30 % window) and zoom (narrow it around the middle) the x range."""
    def pan(i: int) -> None:
        plot.setXRange(i * points / 20, i * points / 20 + points * 0.3, padding=0)

    def zoom(i: int) -> None:
        half = points * 0.5 * 0.6 ** i
        plot.setXRange(points / 2 - half, points / 2 + half, padding=0)

    pan_wall, pan_cpu = _frame_ms(pan, repaint)
    zoom_wall, zoom_cpu = _frame_ms(zoom, repaint)
    return (f"pan {pan_wall:.0f} ms ({pan_cpu:.0f} CPU), zoom {zoom_wall:.0f} ms "
            f"({zoom_cpu:.0f} CPU) per frame")


def plot_runs(smoothing: float, points: int = POINTS, report: bool = True) -> None:
    from desktop.app import make_app
    from desktop.compare_services import CompareServices
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
        settings = Settings(Path(tmp) / "settings.ini")
        settings.columns = 1  # one loss panel as big as the bare pyqtgraph widget below
        settings.set_panel_height("loss", HEIGHT)
        settings.smoothing = smoothing
        panel = PlotsPanel(services, settings, CompareServices(services, settings))
        panel.resize(WIDTH, HEIGHT)
        panel.show()
        app.processEvents()

        t0 = time.perf_counter()
        runs = services.read_plot_data(ids, ["loss"])
        t1 = time.perf_counter()
        cache = plot_data.SmoothingCache()
        spec = plot_data.build(runs, ["loss"], "step", smoothing, cache)
        t2 = time.perf_counter()
        services.selected = ids
        panel.draw(spec)
        app.processEvents()  # the new panel cells are laid out and shown
        repaint = panel.cells[0].view.viewport().repaint
        repaint()
        t3 = time.perf_counter()
        plot_data.build(runs, ["loss"], "step", smoothing, cache)
        t4 = time.perf_counter()
        frames = pan_and_zoom(panel.panels[0].plot, repaint, points)
        if report:
            print(f"plot {RUNS} x {points:,} points, smoothing {smoothing}: store -> arrays "
                  f"{t1 - t0:.3f} s, arrays -> curves {t2 - t1:.3f} s (again {t4 - t3:.3f} s), "
                  f"curves -> first paint {t3 - t2:.3f} s (total {t3 - t0:.2f} s)")
            print(f"  Headroom's plots panel: {frames}")
            print(f"  bare pyqtgraph, same arrays: {bare_pyqtgraph(spec, points)}")
        panel.close()
        services.shutdown()


def bare_pyqtgraph(spec, points: int) -> str:
    """The same curves in a plain PlotItem: peak downsampling, clip to view, else defaults."""
    from PySide6.QtWidgets import QApplication

    from desktop.views.plotting import pg

    widget = pg.GraphicsLayoutWidget()
    widget.setBackground("w")
    widget.setAntialiasing(False)  # pyqtgraph's default (Headroom turns it on for short curves)
    widget.resize(WIDTH, HEIGHT)
    plot = widget.addPlot()
    plot.setDownsampling(auto=True, mode="peak")
    plot.setClipToView(True)
    for curve in spec.panels[0].curves:
        for y in (curve.y,) if curve.smooth is None else (curve.y, curve.smooth):
            plot.addItem(pg.PlotDataItem(curve.x, y, pen=pg.mkPen(curve.colour), antialias=False))
    widget.show()
    QApplication.processEvents()
    widget.viewport().repaint()
    frames = pan_and_zoom(plot, widget.viewport().repaint, points)
    widget.close()
    return frames


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
        print(f"Qt platform: {os.environ['QT_QPA_PLATFORM']}")
        first_window(args.repeat)
        plot_runs(0.6, points=10_000, report=False)  # imports and first-use costs, not timed
        for smoothing in (0.0, 0.6):
            plot_runs(smoothing)
        runs_table(args.runs)


if __name__ == "__main__":
    main()
