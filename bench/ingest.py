"""Ingest speed, against what users would otherwise use (issue 2, "Speed").

Writes a STEPS-step x 4-metric log as Headroom JSONL, generic JSONL, CSV, a
TensorBoard event file and a Megatron-LM console log (a line per step) into a
temporary folder (never the repository), then times in one run:

- Headroom's ingest of each file (``tracker.ingest.ingest`` into a fresh SQLite store);
- the same ingest by Headroom's code at another commit (``--before REF``), so a
  change's effect on time and memory shows in one run;
- the baseline of each case: pyarrow alone parsing the JSONL and CSV (the floor),
  what a user's script would do instead (``pandas.read_csv``, ``pandas.read_json``,
  ``json.loads`` per line), TensorBoard's ``EventAccumulator`` loading every point
  of the event file, and for the console log Python's bare line iteration (the
  floor) and a one-regex script;
- MLflow's ``log_batch`` into its SQLite store for the same points, in a separate
  interpreter where MLflow is installed (``--mlflow-python``; skipped otherwise);
- reading one million-point series back from the store.

Each tool runs on each file in an interpreter of its own, which imports only
what that tool needs and runs it once on a small log first, so no timing
includes one-time imports; each figure is the best of ``--repeat`` timings (3;
EventAccumulator, which takes minutes, is timed once), as ``timeit`` reports.
Beside each time is that interpreter's peak resident memory (its ``VmHWM``,
libraries included), so one tool's peak is never another's. It
prints the times, peaks, the ratios against each baseline, and the targets: JSONL
and CSV ingest within 2x of pyarrow's parse, the event file at least 5x faster
than EventAccumulator, read-back under 20 ms, every ingest under 400 MiB. A new
format is one more entry in ``CASES`` (a writer and its baselines)::

    .venv/bin/python bench/ingest.py              # 1,000,000 steps; EventAccumulator takes minutes
    .venv/bin/python bench/ingest.py --quick      # 100,000 steps
    .venv/bin/python bench/ingest.py --steps 5000000 --only CSV --before main
    .venv/bin/python bench/ingest.py --mlflow-python /path/to/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Headroom's modules are imported where they are used, so the interpreter that times a
# baseline holds only what that baseline needs.

METRICS = ("loss", "lr", "mem_peak_gib", "tokens_per_s")
READ_BACK_TARGET_S = 0.020
PEAK_TARGET_MIB = 400
# Steps of the warm-up log: enough that every reader takes its big-file path (pyarrow for JSONL).
WARM_STEPS = 4_000


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

    from tracker.readers._tfrecord import frame

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


def pandas_csv(path: Path) -> object:
    import pandas as pd

    return pd.read_csv(path).shape


def pandas_json(path: Path) -> object:
    import pandas as pd

    return pd.read_json(path, lines=True).shape


def json_loads(path: Path) -> int:
    """What a user's own script does with JSON lines: ``json.loads`` each into a list of dicts."""
    with open(path, "rb") as f:
        return len([json.loads(line) for line in f if line.strip()])


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
    Case("JSONL (generic)", write_jsonl,
         [Baseline("pyarrow.json parse", arrow_json, 2.0),
          Baseline("pandas.read_json(lines=True)", pandas_json, repeat=1),
          Baseline("json.loads per line", json_loads, repeat=1)]),
    Case("CSV", write_csv,
         [Baseline("pyarrow.csv parse", arrow_csv, 2.0), Baseline("pandas.read_csv", pandas_csv)]),
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


@dataclass
class Measured:
    """One tool on one file: its best time, its interpreter's peak RSS, what it reported."""

    seconds: float
    peak_mib: float
    info: dict


def measure(tool: str, case: int, source: Path, warm: Path, repeat: int, code: Path | None = None
            ) -> Measured:
    """Run ``tool`` in a child interpreter: imports and a run on the small log ``warm``
    untimed, then the best of ``repeat`` timings on ``source``; ``code``: Headroom's
    source tree to import (another commit's), instead of this one."""
    command = [sys.executable, __file__, "--child", tool, str(case), str(source), str(warm),
               "--repeat", str(repeat), *(["--code", str(code)] if code else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{tool} on {source.name} failed: {last}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Measured(found.pop("seconds"), found.pop("peak_mib"), found)


def child(tool: str, case: int, source: Path, warm: Path, repeat: int) -> None:
    """The child's side of :func:`measure`: prints its best time, peak RSS and report as JSON."""
    run = _tool(tool, CASES[case])
    run(warm)
    timings = []
    for _ in range(repeat):
        seconds, info = timed(lambda: run(source))
        timings.append({"seconds": seconds, **info})  # a tool may time its own part
    best = min(timings, key=lambda timing: timing["seconds"])
    print(json.dumps({**best, "peak_mib": _peak_mib()}))


def _tool(tool: str, case: Case) -> Callable[[Path], dict]:
    """What ``tool`` names: "ingest", "reader" or "baseline:<index>", as a function of the file."""
    if tool == "ingest":
        return fresh_ingest
    if tool == "reader":
        from tracker.readers import best_reader

        return lambda path: {"runs": len(best_reader(path).read(path)), "reader": best_reader(path).name}
    baseline = case.baselines[int(tool.split(":", 1)[1])]
    return lambda path: {"result": str(baseline.load(path))[:40]}


def _peak_mib() -> float:
    """This process's peak resident memory: Linux's VmHWM, which starts afresh at exec
    (``ru_maxrss`` keeps the parent's peak across it), else ``ru_maxrss`` (bytes on macOS)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def fresh_ingest(source: Path) -> dict:
    """Ingest ``source`` into a new store of its own beside it; only the ingest is timed (the
    store is created and closed untimed, as an app keeps its store open)."""
    from tracker.ingest import ingest
    from tracker.store import Store

    folder = source.parent
    db = folder / f"headroom-{os.getpid()}-{len(list(folder.glob('headroom-*.db')))}.db"
    store = Store(f"sqlite:///{db}")
    start = time.perf_counter()
    report = ingest(store, [source])
    seconds = time.perf_counter() - start
    store.close()
    result = report.results[0]
    return {"seconds": seconds, "db": str(db), "status": result.status, "reason": result.reason,
            "format": result.format, "points": result.points, "run_id": result.run_id}


def run_case(index: int, case: Case, log: Log, work: Path, rows: list[list[str]], repeat: int,
             before: tuple[str, Path] | None = None) -> tuple[Path, int] | None:
    """Time Headroom's ingest, the same at another commit (``before``: its name and source
    tree) and the case's baselines; returns the store and the run's id."""
    folder = work / f"case{index}"
    folder.mkdir()
    source = case.write(folder, log)
    (folder / "warm").mkdir()
    warm = case.write(folder / "warm", make_log(WARM_STEPS))
    ingested = measure("ingest", index, source, warm, repeat)
    info = ingested.info
    if info["status"] != "ingested":
        rows.append([case.name, "Headroom ingest", "-", "-", "-", "-", f"failed: {info['reason']}"])
        return None
    seconds = ingested.seconds
    rows.append([case.name, f"Headroom ingest ({info['format']})", f"{info['points']:,}",
                 f"{seconds:.2f}", _mib(ingested.peak_mib), _rate(info["points"], seconds),
                 _peak_verdict(ingested.peak_mib)])
    alone = measure("reader", index, source, warm, repeat)
    rows.append(["", f"  of which the {alone.info['reader']} reader", "", f"{alone.seconds:.2f}",
                 _mib(alone.peak_mib), "", "the rest: hashing, storing, enrichment steps"])
    if before is not None:
        ref, code = before
        then = measure("ingest", index, source, warm, repeat, code)
        rows.append(["", f"Headroom ingest at {ref[:12]}", "", f"{then.seconds:.2f}", _mib(then.peak_mib),
                     _rate(log.points, then.seconds),
                     f"{_verdict(seconds, then.seconds, None)}, {_peak_ratio(ingested, then)}"])
    for i, baseline in enumerate(case.baselines):
        base = measure(f"baseline:{i}", index, source, warm, baseline.repeat or repeat)
        rows.append(["", baseline.name, "", f"{base.seconds:.2f}", _mib(base.peak_mib),
                     _rate(log.points, base.seconds),
                     f"{_verdict(seconds, base.seconds, baseline.target)}, {_peak_ratio(ingested, base)}"])
    return Path(info["db"]), info["run_id"]


def _peak_ratio(headroom: Measured, other: Measured) -> str:
    return f"{headroom.peak_mib / other.peak_mib:.2f}x its peak"


def export(ref: str, folder: Path) -> Path:
    """Headroom's source tree at git ``ref``, unpacked into ``folder``."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "-C", str(root), "archive", ref], capture_output=True, check=True)
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def _mib(peak: float) -> str:
    return f"{peak:,.0f} MiB"


def _peak_verdict(peak: float) -> str:
    return f"peak target < {PEAK_TARGET_MIB} MiB: {'met' if peak < PEAK_TARGET_MIB else 'MISSED'}"


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
    from tracker.store import Store

    store = Store(f"sqlite:///{db}")
    store.series(run_id, "loss")  # warm the page cache, as a second plot would find it
    best = min(timed(lambda: store.series(run_id, "loss"))[0] for _ in range(5))
    n = len(store.series(run_id, "loss"))
    ok = "met" if best < READ_BACK_TARGET_S else "MISSED"
    rows.append(["read-back", "Store.series(run, 'loss')", f"{n:,}", f"{best * 1000:.1f} ms", "",
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
        rows.append(["MLflow", "log_batch into SQLite", "-", "-", "-", "-",
                     "skipped: give --mlflow-python (a venv with mlflow-skinny, sqlalchemy, alembic)"])
        return
    db = work / "mlflow.db"
    command = [python, "-c", MLFLOW_SCRIPT, f"sqlite:///{db}", str(work / "artifacts"), str(steps),
               ",".join(METRICS)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        rows.append(["MLflow", "log_batch into SQLite", "-", "-", "-", "-", f"skipped: {last[:90]}"])
        return
    seconds = float(done.stdout.strip().splitlines()[-1])
    points = steps * len(METRICS)
    projected = seconds * total / points
    note = "" if points == total else f"measured on {points:,} points; all {total:,}: ~{projected:.0f} s"
    rows.append(["MLflow", "log_batch into SQLite", f"{points:,}", f"{seconds:.2f}", "",
                 _rate(points, seconds), note])


def print_table(rows: list[list[str]]) -> None:
    header = ["case", "tool", "points", "time", "peak RSS", "rate", "comparison"]
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
    parser.add_argument("--before", metavar="REF",
                        help="also time the ingest of Headroom's code at this git commit or branch")
    parser.add_argument("--child", nargs=4, metavar=("TOOL", "CASE", "SOURCE", "WARM"),
                        help=argparse.SUPPRESS)  # one measurement, in an interpreter of its own
    parser.add_argument("--code", help=argparse.SUPPRESS)  # the child's Headroom source tree
    args = parser.parse_args(argv)
    if args.child:
        tool, case, source, warm = args.child
        if args.code:
            sys.path.insert(0, args.code)
        child(tool, int(case), Path(source), Path(warm), args.repeat)
        return 0
    steps = 100_000 if args.quick else args.steps
    log = make_log(steps)
    rows: list[list[str]] = []
    print(f"{steps:,} steps x {len(METRICS)} metrics = {log.points:,} points per file\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="headroom-bench-") as tmp:
        work = Path(tmp)
        before = (args.before, export(args.before, work / "before")) if args.before else None
        stored = None
        for index, case in enumerate(CASES):
            if args.only and case.name not in args.only:
                continue
            print(f"... {case.name}", flush=True)
            stored = run_case(index, case, log, work, rows, args.repeat, before) or stored
        if stored is not None:
            read_back(*stored, rows)
        print("... MLflow", flush=True)
        mlflow(args.mlflow_python, min(steps, args.mlflow_steps), log.points, work, rows)
    print()
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
