"""Command-line start-up: how long everyday commands take, against ``headroom --version``.

``--version`` imports the command line and answers: the floor any command pays
(Python's start and the launcher). A second floor is the database libraries'
import alone (SQLAlchemy's ORM and SQLModel), which any command that opens the
database pays. Beside them, in one run and interleaved so the machine's noise
hits all alike:

- ``headroom runs`` on a database holding the bundled sample runs;
- ``headroom ingest`` of a small new Headroom JSON-lines log (a fresh file each
  time, so every run stores a new run) into that database, and of a small new
  CSV table (``ingest csv``, a Lightning-style ``metrics.csv``);
- ``headroom size --model llama-3.1-8b --method lora --gpu rtx-4090``, which also
  fits the memory model to the database's runs.

Each command runs once untimed first (so Python's bytecode caches are written, as
pip writes them at install), then REPEAT times; the median and the best wall
time are printed with their ratio to the floor, the median CPU time (steadier
than wall time on a shared machine), and the targets (runs within 0.4 s, a
small ingest within 0.6 s on a 2-core machine). Everything lives in a temporary
folder::

    .venv/bin/python bench/cli.py                       # this checkout
    .venv/bin/python bench/cli.py --headroom /path/to/venv/bin/headroom   # an installed one
    .venv/bin/python bench/cli.py --only ingest --repeat 15   # the floors and one command
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.resources import resources_dir  # noqa: E402

TARGETS = {"runs": 0.4, "ingest": 0.6, "ingest csv": 0.6}
FLOORS = ("--version (floor)", "db libraries alone")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "HEADROOM_HOME": str(home), "PYTHONPATH": str(ROOT)}


def _small_log(folder: Path, index: int) -> Path:
    path = folder / f"small-{index}.jsonl"
    lines = [{"headroom": 1, "run": {"name": f"small-{index}", "shape": {"micro_batch_size": 4}}}]
    lines += [{"step": s, "loss": 3.0 - s / 100 + index / 1e6, "lr": 1e-4} for s in range(1, 21)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _small_table(folder: Path, index: int) -> Path:
    path = folder / f"table-{index}" / "metrics.csv"
    path.parent.mkdir()
    rows = [f"{s // 10},{s},{3.0 - s / 100 + index / 1e6},{'' if s % 10 else 2.9}" for s in range(1, 21)]
    path.write_text("epoch,step,train_loss,val_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _time(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode})")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument("--headroom", nargs="+", metavar="COMMAND",
                        default=[sys.executable, "-m", "desktop.launcher"],
                        help="how to start headroom (default: this Python on this checkout)")
    parser.add_argument("--only", nargs="+", choices=("runs", "ingest", "ingest csv", "size"),
                        help="time only these commands (beside the two floors)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env, db = _env(tmp / "home"), str(tmp / "bench.db")
        headroom = args.headroom
        subprocess.run([*headroom, "ingest", str(resources_dir() / "samples"), "--db", db],
                       env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        logs = iter(_small_log(tmp, i) for i in range(args.repeat + 1))
        tables = iter(_small_table(tmp, i) for i in range(args.repeat + 1))
        commands = {
            FLOORS[0]: lambda: [*headroom, "--version"],
            FLOORS[1]: lambda: [sys.executable, "-c", "import sqlalchemy.orm, sqlmodel"],
            "runs": lambda: [*headroom, "runs", "--db", db],
            "ingest": lambda: [*headroom, "ingest", str(next(logs)), "--db", db],
            "ingest csv": lambda: [*headroom, "ingest", str(next(tables)), "--db", db],
            "size": lambda: [*headroom, "size", "--model", "llama-3.1-8b", "--method", "lora",
                             "--gpu", "rtx-4090", "--db", db],
        }
        if args.only:
            commands = {name: make for name, make in commands.items()
                        if name in args.only or name in FLOORS}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for make in commands.values():  # untimed: bytecode caches, first-run costs
            _time(make(), env)
        for _ in range(args.repeat):
            for name, make in commands.items():
                times[name].append(_time(make(), env))
    _report(times, args.repeat)


def _report(times: dict[str, list[tuple[float, float]]], repeat: int) -> None:
    floor = statistics.median(wall for wall, _ in times[FLOORS[0]])
    print(f"headroom commands, {repeat} runs each, interleaved (seconds):")
    print(f"{'command':<20}{'median':>8}{'best':>8}{'x floor':>9}{'CPU':>8}  target")
    for name, runs in times.items():
        walls = [wall for wall, _ in runs]
        median, cpu = statistics.median(walls), statistics.median(c for _, c in runs)
        target = TARGETS.get(name)
        verdict = "" if target is None else (
            f"<= {target:.1f} s {'met' if median <= target else 'missed'}")
        print(f"{name:<20}{median:>8.3f}{min(walls):>8.3f}{median / floor:>9.1f}{cpu:>8.3f}  "
              f"{verdict}")


if __name__ == "__main__":
    main()
