"""Ingest speed, against what users would otherwise use (issue 2, "Speed").

Writes a STEPS-step x 4-metric log as Headroom JSONL, generic JSONL, CSV, a
TensorBoard event file and a Megatron-LM console log (a line per step) into a
temporary folder (never the repository), then times in one run:

- Headroom's ingest of each file (``tracker.ingest.ingest`` into a fresh SQLite store);
- the baseline of each case: pyarrow alone parsing the JSONL and CSV (the floor),
  TensorBoard's ``EventAccumulator`` loading every point of the event file, and for
  the console log Python's bare line iteration (the floor) and a one-regex script;
- MLflow's ``log_batch`` into its SQLite store for the same points, in a separate
  interpreter where MLflow is installed (``--mlflow-python``; skipped otherwise);
- reading one million-point series back from the store.

Each case runs once on a small log first, so no timing includes one-time
imports, and each figure is the best of ``--repeat`` timings (3; EventAccumulator,
which takes minutes, is timed once), as ``timeit`` reports. It prints the times,
the ratios against each baseline, and the targets: JSONL and CSV ingest within 2x
of pyarrow's parse, the event file at least 5x faster than EventAccumulator,
read-back under 20 ms. A new format is one more entry in
``CASES`` (a writer and its baselines)::

    .venv/bin/python bench/ingest.py              # 1,000,000 steps; EventAccumulator takes minutes
    .venv/bin/python bench/ingest.py --quick      # 100,000 steps
    .venv/bin/python bench/ingest.py --mlflow-python /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.ingest import ingest  # noqa: E402
from tracker.readers import best_reader  # noqa: E402
from tracker.readers._tfrecord import frame  # noqa: E402
from tracker.store import Store  # noqa: E402

METRICS = ("loss", "lr", "mem_peak_gib", "tokens_per_s")
READ_BACK_TARGET_S = 0.020


@dataclass
class Log:
    """The generated run: steps, wall times and four metric columns."""

    steps: np.ndarray
    wall: np.ndarray
    columns: dict[str, np.ndarray]

    @property
    def points(self) -> int:
        return len(self.steps) * len(self.columns)


@dataclass
class Baseline:
    """Another tool loading the same file; ``target`` bounds Headroom's time / this one's."""

    name: str
    load: Callable[[Path], object]
    target: float | None = None
    repeat: int | None = None  # timings to take the best of (default: --repeat)


@dataclass
class Case:
    """One format: how to write the log, and what to compare Headroom's ingest with."""

    name: str
    write: Callable[[Path, Log], Path]
    baselines: list[Baseline] = field(default_factory=list)


# Writers


def make_log(steps: int) -> Log:
    rng = np.random.default_rng(0)
    step = np.arange(steps, dtype=np.int64)
    columns = {
        "loss": 2.0 + 8.0 / np.sqrt(step + 1) + rng.normal(0, 0.05, steps),
        "lr": 3e-4 * np.minimum(1.0, (step + 1) / 2000) * (1 - step / (steps + 1)),
        "mem_peak_gib": 61.0 + rng.normal(0, 0.3, steps),
        "tokens_per_s": 5120.0 + rng.normal(0, 40, steps),
    }
    return Log(step, 1.7e9 + step * 0.5, columns)


def write_headroom_jsonl(folder: Path, log: Log) -> Path:
    header = {"headroom": 1, "run": {"name": "bench", "started": "2026-01-01T00:00:00"}}
    return _write_jsonl(folder / "headroom.jsonl", log, json.dumps(header) + "\n")


def write_jsonl(folder: Path, log: Log) -> Path:
    return _write_jsonl(folder / "metrics.jsonl", log, "")


def _write_jsonl(path: Path, log: Log, header: str) -> Path:
    cols = [log.columns[m].tolist() for m in METRICS]
    with open(path, "w") as f:
        f.write(header)
        for i, step in enumerate(log.steps.tolist()):
            f.write(f'{{"step": {step}, "loss": {cols[0][i]!r}, "lr": {cols[1][i]!r}, '
                    f'"mem_peak_gib": {cols[2][i]!r}, "tokens_per_s": {cols[3][i]!r}}}\n')
    return path


def write_csv(folder: Path, log: Log) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pc

    path = folder / "metrics.csv"
    pc.write_csv(pa.table({"step": log.steps, **log.columns}), str(path))
    return path


def write_events(folder: Path, log: Log) -> Path:
    """One scalar event per point, as torch's SummaryWriter writes them (4 events a step)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    path = folder / "events" / f"events.out.tfevents.{int(log.wall[0])}.bench.1.0"
    path.parent.mkdir(exist_ok=True)
    event = Event(summary=Summary(value=[Summary.Value(tag="x", simple_value=0.0)]))
    value = event.summary.value[0]
    cols = [(m, log.columns[m].tolist()) for m in METRICS]
    with open(path, "wb") as f:
        f.write(frame(Event(wall_time=log.wall[0], file_version="brain.Event:2").SerializeToString()))
        chunk = []
        for i, (step, wall) in enumerate(zip(log.steps.tolist(), log.wall.tolist(), strict=True)):
            event.step, event.wall_time = step, wall
            for tag, values in cols:
                value.tag, value.simple_value = tag, values[i]
                chunk.append(frame(event.SerializeToString()))
            if len(chunk) >= 100_000:
                f.write(b"".join(chunk))
                chunk.clear()
        f.write(b"".join(chunk))
    return path.parent


def write_megatron(folder: Path, log: Log) -> Path:
    """A Megatron-LM console log: one iteration line per step, a memory report every 100 steps."""
    path = folder / "megatron.log"
    loss, lr, mem, tps = (log.columns[m].tolist() for m in METRICS)
    with open(path, "w") as f:
        for i, step in enumerate(log.steps.tolist(), start=0):
            stamp = f"[2026-01-01 00:{i // 60 % 60:02d}:{i % 60:02d}]"
            f.write(f" {stamp} iteration {step + 1:8d}/{len(loss):8d} |"
                    f" consumed samples: {(step + 1) * 512:12d} | elapsed time per iteration (ms): "
                    f"{512 * 4096 / tps[i] * 1000:.1f} | learning rate: {lr[i]:.6E} | global batch size:"
                    f"   512 | lm loss: {loss[i]:.6E} | loss scale: 1.0 | grad norm: 1.234 | number of "
                    "skipped iterations:   0 | number of nan iterations:   0 |\n")
            if step % 100 == 0:
                f.write(f"[Rank 0] (after {step + 1} iterations) memory (MB) | allocated: 15012.25 | "
                        f"max allocated: {mem[i] * 1024:.2f} | reserved: 65000.00 | max reserved: 65000.00\n")
    return path


# Baselines


def arrow_json(path: Path) -> object:
    import pyarrow.json as pj

    return pj.read_json(str(path), read_options=pj.ReadOptions(block_size=1 << 22))


def arrow_csv(path: Path) -> object:
    import pyarrow.csv as pc

    return pc.read_csv(str(path))


def event_accumulator(folder: Path) -> int:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])


def python_lines(path: Path) -> int:
    """The floor for a text log: Python reading its lines and doing nothing with them."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def regex_script(path: Path) -> int:
    """What a user's own parse script does: one regex per line, a float per field."""
    import re

    line_re = re.compile(r"iteration\s+(\d+)/.*?learning rate: (\S+) \|.*?lm loss: (\S+) \|")
    points = []
    with open(path, errors="replace") as f:
        for line in f:
            match = line_re.search(line)
            if match:
                points.append((int(match[1]), float(match[2]), float(match[3])))
    return len(points)


CASES: list[Case] = [
    Case("JSONL (Headroom)", write_headroom_jsonl, [Baseline("pyarrow.json parse", arrow_json, 2.0)]),
    Case("JSONL (generic)", write_jsonl, [Baseline("pyarrow.json parse", arrow_json, 2.0)]),
    Case("CSV", write_csv, [Baseline("pyarrow.csv parse", arrow_csv, 2.0)]),
    Case("TensorBoard", write_events,
         [Baseline("EventAccumulator, size_guidance 0", event_accumulator, 1 / 5, repeat=1)]),
    Case("Megatron console log", write_megatron,
         [Baseline("Python line iteration (floor)", python_lines),
          Baseline("regex script (loss and lr only)", regex_script)]),
]


# Timing


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    """The fastest of ``repeat`` timings (the one least disturbed by the rest of the machine)."""
    return min((timed(fn) for _ in range(repeat)), key=lambda timing: timing[0])


def fresh_ingest(folder: Path, source: Path) -> tuple[float, Path, object]:
    """Ingest ``source`` into a new store of its own (created and closed untimed, as an app
    keeps its store open); returns the ingest's time, the database and the report."""
    db = folder / f"headroom-{len(list(folder.glob('headroom-*.db')))}.db"
    store = Store(f"sqlite:///{db}")
    seconds, report = timed(lambda: ingest(store, [source]))
    store.close()
    return seconds, db, report


def run_case(case: Case, log: Log, work: Path, rows: list[list[str]], repeat: int
             ) -> tuple[Path, int] | None:
    """Time Headroom's ingest and the case's baselines; returns the store and the run's id."""
    folder = work / f"case{len(rows)}"
    folder.mkdir()
    source = case.write(folder, log)
    seconds, db, report = min((fresh_ingest(folder, source) for _ in range(repeat)),
                              key=lambda timing: timing[0])
    result = report.results[0]
    if result.status != "ingested":
        rows.append([case.name, "Headroom ingest", "-", "-", "-", f"failed: {result.reason}"])
        return None
    rows.append([case.name, f"Headroom ingest ({result.format})", f"{result.points:,}",
                 f"{seconds:.2f}", _rate(result.points, seconds), ""])
    reader = best_reader(source)
    alone, _ = best_of(repeat, lambda: reader.read(source))
    rows.append(["", f"  of which the {reader.name} reader", "", f"{alone:.2f}", "",
                 "the rest: hashing, storing, enrichment steps"])
    for baseline in case.baselines:
        base, _ = best_of(baseline.repeat or repeat, lambda b=baseline: b.load(source))
        rows.append(["", baseline.name, "", f"{base:.2f}", _rate(log.points, base),
                     _verdict(seconds, base, baseline.target)])
    return db, result.run_id


def warm_up(cases: list[Case], work: Path) -> None:
    """Run every case once on a small log, so no timing pays for first imports."""
    small = make_log(1_000)
    for i, case in enumerate(cases):
        folder = work / f"warm{i}"
        folder.mkdir()
        source = case.write(folder, small)
        store = Store(f"sqlite:///{folder / 'warm.db'}")
        ingest(store, [source])
        store.close()
        for baseline in case.baselines:
            baseline.load(source)


def _rate(points: int, seconds: float) -> str:
    return f"{points / seconds / 1e6:.2f} M/s" if seconds > 0 else "-"


def _verdict(headroom: float, baseline: float, target: float | None) -> str:
    ratio = headroom / baseline
    text = f"Headroom {ratio:.2f}x its time" if ratio >= 1 else f"Headroom {1 / ratio:.1f}x faster"
    if target is None:
        return text
    goal = f"<= {target:g}x" if target >= 1 else f">= {1 / target:g}x faster"
    return f"{text} (target {goal}: {'met' if ratio <= target else 'MISSED'})"


def read_back(db: Path, run_id: int, rows: list[list[str]]) -> None:
    store = Store(f"sqlite:///{db}")
    store.series(run_id, "loss")  # warm the page cache, as a second plot would find it
    best = min(timed(lambda: store.series(run_id, "loss"))[0] for _ in range(5))
    n = len(store.series(run_id, "loss"))
    ok = "met" if best < READ_BACK_TARGET_S else "MISSED"
    rows.append(["read-back", "Store.series(run, 'loss')", f"{n:,}", f"{best * 1000:.1f} ms",
                 _rate(n, best), f"target < {READ_BACK_TARGET_S * 1000:.0f} ms: {ok}"])
    store.close()


MLFLOW_SCRIPT = r"""
import sys, time
from mlflow.entities import Metric
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
uri, artifacts, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sys.argv[4].split(",")
store = SqlAlchemyStore(uri, artifacts)
run = store.create_run(store.create_experiment("bench"), "bench", 0, [], "bench").info.run_id
start = time.perf_counter()
batch = []
for step in range(steps):
    for i, name in enumerate(names):
        batch.append(Metric(name, 1.0 / (step + 1) + i, 1700000000000 + step, step))
    if len(batch) >= 1000:  # MLflow's limit per log_batch call
        store.log_batch(run, metrics=batch, params=[], tags=[])
        batch = []
if batch:
    store.log_batch(run, metrics=batch, params=[], tags=[])
print(time.perf_counter() - start)
"""


def mlflow(python: str | None, steps: int, total: int, work: Path, rows: list[list[str]]) -> None:
    if not python:
        rows.append(["MLflow", "log_batch into SQLite", "-", "-", "-",
                     "skipped: give --mlflow-python (a venv with mlflow-skinny, sqlalchemy, alembic)"])
        return
    db = work / "mlflow.db"
    command = [python, "-c", MLFLOW_SCRIPT, f"sqlite:///{db}", str(work / "artifacts"), str(steps),
               ",".join(METRICS)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        rows.append(["MLflow", "log_batch into SQLite", "-", "-", "-", f"skipped: {last[:90]}"])
        return
    seconds = float(done.stdout.strip().splitlines()[-1])
    points = steps * len(METRICS)
    projected = seconds * total / points
    note = "" if points == total else f"measured on {points:,} points; all {total:,}: ~{projected:.0f} s"
    rows.append(["MLflow", "log_batch into SQLite", f"{points:,}", f"{seconds:.2f}",
                 _rate(points, seconds), note])


def print_table(rows: list[list[str]]) -> None:
    header = ["case", "tool", "points", "time", "rate", "comparison"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000, help="steps in the generated log")
    parser.add_argument("--quick", action="store_true", help="100,000 steps, for a fast check")
    parser.add_argument("--mlflow-python", default=os.environ.get("MLFLOW_PYTHON"),
                        help="interpreter with MLflow installed (default: $MLFLOW_PYTHON)")
    parser.add_argument("--mlflow-steps", type=int, default=25_000,
                        help="steps MLflow logs (it manages ~10,000 points/s; the rest is projected)")
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timings of each tool to take the best of (EventAccumulator: one)")
    args = parser.parse_args(argv)
    steps = 100_000 if args.quick else args.steps
    log = make_log(steps)
    rows: list[list[str]] = []
    print(f"{steps:,} steps x {len(METRICS)} metrics = {log.points:,} points per file\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="headroom-bench-") as tmp:
        work = Path(tmp)
        cases = [case for case in CASES if not args.only or case.name in args.only]
        warm_up(cases, work)
        stored = None
        for case in cases:
            print(f"... {case.name}", flush=True)
            stored = run_case(case, log, work, rows, args.repeat) or stored
        if stored is not None:
            read_back(*stored, rows)
        print("... MLflow", flush=True)
        mlflow(args.mlflow_python, min(steps, args.mlflow_steps), log.points, work, rows)
    print()
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
