"""Comparing many runs: groups with bands over 50 x 100,000 points, and queries over 10,000 runs.

1. Groups. RUNS runs of POINTS loss points each (GROUPS learning rates x seeds) are stored;
   the plots panel groups them by a pattern over the name and draws each group's mean and
   std band. Timed: store -> arrays (reading the series), arrays -> group curves (placing
   the curves and aggregating every point on aligned steps), curves -> first paint. Twice:
   every run logging the same steps (the usual case), then every run logging at its own
   offset (each run interpolated on the union of steps: 5,000,000 grid points). Beside it,
   what a notebook would do: pandas ``groupby(["group", "step"]).agg(["mean", "std"])`` on
   the same points in long form, already in a DataFrame (without plotting).
2. Queries. QUERY_RUNS runs with shapes and series summaries are written straight into the
   tables; each query is timed through ``tracker.query.matching_ids`` (SQL where the fields are
   columns, Python for the rest), median of REPEAT. Beside it: reading every run's summary
   and filtering in Python (what a script over ``headroom runs --json`` does), and the
   app's filter box, which checks the summaries the runs table already holds.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/compare.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS, POINTS, GROUPS = 50, 100_000, 5
QUERY_RUNS = 10_000
REPEAT = 5
WIDTH, HEIGHT = 1200, 800
QUERIES = (
    'method == "lora" and peak_gib > 40 and model ~ "llama"',
    "seq_len >= 4096 and n_gpus > 1",
    'final_loss < 1.5 or best_eval < 1.4',
    '"baseline" in tags and status == "finished"',
    'not (precision in ["mixed-bf16", "bf16"]) and lora_rank >= 16',
    'severity == "critical" or name ~ "seed[0-4]$"',
    "seq_len >= 16384 and config.lr > 0",  # the config is read in Python, after SQL's part
)


def _store_runs(store, offset: bool) -> list[int]:
    from core.runlog import RunLog
    from tracker.db import runs as run_store

    rng = np.random.default_rng(0)
    ids = []
    for i in range(RUNS):
        group, seed = divmod(i, RUNS // GROUPS)
        steps = np.arange(POINTS) * 10 + (seed if offset else 0)
        loss = (2.0 + 3.0 / (1 + steps / 200_000) + 0.05 * group
                + 0.05 * rng.standard_normal(POINTS))
        log = RunLog(format="bench", name=f"lr{group}-seed{seed}")
        log.add_series("loss", steps, loss)
        with store.session() as s:
            ids.append(run_store.save(s, log, f"/bench/{i}", f"bench-{i}", [], None)[0])
    return ids


def groups(offset: bool) -> None:
    import pandas as pd

    from desktop.app import make_app
    from desktop.compare_services import CompareServices
    from desktop.presenters import plot_data
    from desktop.presenters.groups import Grouping
    from desktop.services import AppServices
    from desktop.settings import Settings
    from desktop.views.plots_panel import PlotsPanel
    from tracker.store import Store

    app = make_app()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "bench.db"))
        ids = _store_runs(store, offset)
        services = AppServices(store)
        settings = Settings(Path(tmp) / "settings.ini")
        compare = CompareServices(services, settings)
        panel = PlotsPanel(services, settings, compare)
        panel.toolbar.smooth_slider.setValue(0)
        panel.resize(WIDTH, HEIGHT)
        panel.show()
        compare.set_grouping(Grouping(by=r"name~-seed\d+"))
        services.select(ids)
        while services.workers.busy:  # the panel's own load of the selection, untimed
            app.processEvents()
        import desktop.views.metric_plot  # noqa: F401 (pyqtgraph's import, once per app, untimed)

        t0 = time.perf_counter()
        runs = services.read_plot_data(ids, ["loss"])
        t1, c1 = time.perf_counter(), time.process_time()
        spec = panel.groups.apply(plot_data.build(runs, ["loss"], "step", 0.0))
        t2 = time.perf_counter()
        panel.spec = spec
        panel.draw(spec)
        panel.grid.repaint()
        t3, c3 = time.perf_counter(), time.process_time()
        bands = panel.groups._groups[0]
        assert len(bands) == GROUPS and all(len(b.band.x) >= POINTS for b in bands)
        long = pd.DataFrame({"group": np.repeat([r.name.split("-")[0] for r in runs], POINTS),
                             "step": np.concatenate([r.series["loss"].steps for r in runs]),
                             "loss": np.concatenate([r.series["loss"].values for r in runs])})
        t4 = time.perf_counter()
        long.groupby(["group", "step"])["loss"].agg(["mean", "std"])
        t5 = time.perf_counter()
        steps = "each run at its own offset" if offset else "the same steps"
        print(f"groups, {RUNS} runs x {POINTS:,} points in {GROUPS} groups, {steps}: "
              f"store -> arrays {t1 - t0:.2f} s, arrays -> group curves {t2 - t1:.2f} s, "
              f"curves -> first paint {t3 - t2:.2f} s; grouped and drawn {t3 - t1:.2f} s "
              f"({c3 - c1:.2f} s CPU; with reading {t3 - t0:.2f} s)")
        print(f"  pandas groupby mean/std on the same points (no plot): {t5 - t4:.2f} s")
        panel.close()
        services.shutdown()


def _fill_runs(store) -> None:
    """QUERY_RUNS runs with shapes, tags, findings and five series summaries each."""
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from tracker.db.schema import FindingRow, Run, RunTag, SeriesRow

    rng = np.random.default_rng(1)
    now = datetime.now(UTC)
    methods, precisions = ("full", "lora", "qlora"), ("mixed-bf16", "bf16", "fp16", "nf4")
    runs, series, tags, findings = [], [], [], []
    for i in range(1, QUERY_RUNS + 1):
        shape = {"model": ("meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistral-7b")[i % 3],
                 "method": methods[i % 3], "precision": precisions[i % 4],
                 "seq_len": int(2 ** rng.integers(9, 15)), "n_gpus": int(rng.integers(1, 9)),
                 "lora_rank": int(2 ** rng.integers(2, 8))}
        runs.append({"id": i, "source_key": f"/b/{i}", "content_key": f"k{i}",
                     "name": f"exp{i // 10}-seed{i % 10}", "format": "bench",
                     "source_path": f"/b/{i}", "ingested_at": now, "updated_at": now,
                     "status": ("finished", "crashed", "running")[i % 3], "notes": "",
                     "user": "", "host": "", "exclude_from_fit": False,
                     "shape": {"values": shape, "sources": {}}, "config": {}, "summary": {}})
        for j, (name, value) in enumerate((("loss", rng.uniform(0.5, 3)),
                                          ("eval_loss", rng.uniform(0.5, 3)),
                                          ("mem_peak_gib", rng.uniform(5, 80)),
                                          ("tokens_per_s", rng.uniform(1e3, 5e4)),
                                          ("lr", 1e-4))):
            series.append({"id": i * 5 + j, "run_id": i, "name": name, "original_name": name,
                           "count": 1000, "first_step": 0, "last_step": 1000, "min": value,
                           "max": value, "last": value, "first_nonfinite_step": None,
                           "has_wall_time": False})
        if i % 7 == 0:
            tags.append({"run_id": i, "tag": "baseline"})
        if i % 11 == 0:
            findings.append({"run_id": i, "kind": "loss_nan", "severity": "critical",
                             "message": "", "evidence": {}})
    with store.session() as s:
        for table, rows in ((Run, runs), (SeriesRow, series), (RunTag, tags),
                            (FindingRow, findings)):
            s.session.execute(insert(table), rows)


def queries() -> None:
    from tracker import query
    from tracker.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "bench.db"))
        _fill_runs(store)
        t0 = time.perf_counter()
        summaries = store.runs()
        load = time.perf_counter() - t0
        print(f"queries over {QUERY_RUNS:,} runs (median of {REPEAT}); reading every run's "
              f"summary once takes {load:.2f} s")
        for text in QUERIES:
            compiled = query.compile(text)
            times, found = [], []
            for _ in range(REPEAT):
                t = time.perf_counter()
                found = query.matching_ids(store, compiled)
                times.append(time.perf_counter() - t)
            t = time.perf_counter()
            in_memory = [r.id for r in summaries if compiled.matches(r, {})]
            memory = time.perf_counter() - t
            assert sorted(found) == sorted(in_memory), text
            print(f"  {text}\n    {len(found):>5} runs: headroom runs --where "
                  f"{statistics.median(times) * 1000:.0f} ms; read all + filter "
                  f"{(load + memory) * 1000:.0f} ms; the app's filter box "
                  f"{memory * 1000:.0f} ms")


def main() -> None:
    groups(offset=False)
    groups(offset=True)
    queries()


if __name__ == "__main__":
    main()
