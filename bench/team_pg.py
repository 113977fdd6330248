"""How interactive the runs table and series reads stay on a big team database.

Generates a PostgreSQL (or SQLite) store with ``--runs`` runs and ``--points``
points in total (default 10,000 runs and 100 million points: five metrics per
run, plus one run with a 1,000,000-point series), then times what the app
does: list every run's summary, one page of runs filtered by name, read a
typical series and the million-point one.

    python bench/team_pg.py --db postgresql+psycopg://user@host/db   # an empty database
    python bench/team_pg.py                                           # starts a private server
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.runlog import RunLog  # noqa: E402
from tracker.db import runs as run_store  # noqa: E402
from tracker.store import Store  # noqa: E402

METRICS = ("loss", "lr", "mem_peak_gib", "tokens_per_s", "grad_norm")


def populate(store: Store, n_runs: int, total_points: int) -> None:
    per_series = max(1, (total_points - 1_000_000) // (n_runs * len(METRICS)))
    rng = np.random.default_rng(0)
    steps = np.arange(per_series)
    started = time.perf_counter()
    for i in range(n_runs):
        log = RunLog(format="bench", name=f"run-{i:05d}")
        for name in METRICS:
            log.add_series(name, steps, rng.random(per_series))
        _save(store, log, i)
        if i % 1000 == 999:
            print(f"  {i + 1} runs stored ({time.perf_counter() - started:.0f} s)", flush=True)
    big = RunLog(format="bench", name="big-run")
    big.add_series("loss", np.arange(1_000_000), rng.random(1_000_000))
    _save(store, big, n_runs)


def _save(store: Store, log: RunLog, i: int) -> None:
    with store.session() as s:
        run_store.save(s, log, f"/bench/{i}", f"bench-{i}", [], None)


def timed(label: str, fn, repeat: int = 3) -> None:
    best = min(_once(fn) for _ in range(repeat))
    print(f"{label:<48} {best * 1000:9.1f} ms")


def _once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an empty database URL (default: a private PostgreSQL server)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=100_000_000)
    args = parser.parse_args()
    cluster = None
    url = args.db
    if url is None:
        from tests.pg import fresh_database, server_url

        server, cluster = server_url()
        if server is None:
            print("no PostgreSQL server available: pass --db", file=sys.stderr)
            return 2
        url = fresh_database(server)
    try:
        store = Store(url)
        print(f"populating {store.display_url}: {args.runs} runs, {args.points:,} points")
        t = time.perf_counter()
        populate(store, args.runs, args.points)
        print(f"populated in {time.perf_counter() - t:.0f} s\n")
        ids = [r.id for r in store.runs()]
        big = store.find_run("big-run").id
        timed("runs table: every run with its summaries", store.runs)
        timed("runs table: run count", store.run_count)
        timed("one page: 100 runs by id", lambda: store.runs(ids[:100]))
        timed("find a run by partial name", lambda: store.find_run(f"run-{args.runs // 2:05d}"))
        timed("read a typical series", lambda: store.series(ids[len(ids) // 2], "loss"))
        timed("read a 1,000,000-point series", lambda: store.series(big, "loss"))
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
