"""Command-line start-up: how long everyday commands take, against ``headroom --version``.

``--version`` imports the command line and answers: the floor any command pays
(Python's start and the launcher). A second floor is the database libraries'
import alone (SQLAlchemy and its ORM), which any command that opens the
database pays; a third, the modules an ingest's writes need (those libraries,
numpy, the schema's tables) with nothing run. Beside them, in one run and interleaved so the machine's noise
hits all alike:

- ``headroom runs`` on a database holding the bundled sample runs;
- ``headroom ingest`` of a small new Headroom JSON-lines log (a fresh file each
  time, so every run stores a new run) into that database, and of a small new
  CSV table (``ingest csv``, a Lightning-style ``metrics.csv`` whose loss curve is not the
  JSON-lines logs', so it stores a run of its own rather than joining one as its second log);
- ``headroom size --model llama-3.1-8b --method lora --gpu rtx-4090``, which also
  fits the memory model to the database's runs.

With ``--before REF`` the same commands also run on Headroom's code at git REF
(its own database, filled the same way), interleaved with this checkout's.

Each command runs once untimed first (so Python's bytecode caches are written, as
pip writes them at install), then REPEAT times; the median and the best wall
time are printed with their ratio to the floor, the median CPU time (steadier
than wall time on a shared machine), and the targets (runs within 0.4 s, a
small ingest within 0.6 s on a 2-core machine). Everything lives in a temporary
folder::

    .venv/bin/python bench/cli.py                       # this checkout
    .venv/bin/python bench/cli.py --headroom /path/to/venv/bin/headroom   # an installed one
    .venv/bin/python bench/cli.py --only ingest --repeat 15   # the floors and one command
    .venv/bin/python bench/cli.py --only ingest --before main  # beside the code at main
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

from ingest import export  # noqa: E402 (bench/ingest.py: a git ref's source tree)

from core.resources import resources_dir  # noqa: E402

TARGETS = {"runs": 0.4, "ingest": 0.6, "ingest csv": 0.6}
FLOORS = ("--version (floor)", "db libraries alone", "ingest's imports")


def _env(home: Path, code: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "HEADROOM_HOME": str(home), "PYTHONPATH": str(code)}


def _small_log(folder: Path, index: int) -> Path:
    path = folder / f"small-{index}.jsonl"
    lines = [{"headroom": 1, "run": {"name": f"small-{index}", "shape": {"micro_batch_size": 4}}}]
    lines += [{"step": s, "loss": 3.0 - s / 100 + index / 1e6, "lr": 1e-4} for s in range(1, 21)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _small_table(folder: Path, index: int) -> Path:
    path = folder / f"table-{index}" / "metrics.csv"
    path.parent.mkdir()
    rows = [f"{s // 10},{s},{2.5 - s / 80 + index / 1e6},{'' if s % 10 else 2.9}" for s in range(1, 21)]
    path.write_text("epoch,step,train_loss,val_loss\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _time(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command``, in the folder of the
    code it runs (``python -m`` puts that folder first on the path)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=env["PYTHONPATH"], stdout=subprocess.DEVNULL)
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
    parser.add_argument("--before", metavar="REF",
                        help="also time the commands with Headroom's code at git REF, interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = _env(tmp / "home")
        commands = {
            FLOORS[0]: (lambda: [*args.headroom, "--version"], env),
            FLOORS[1]: (lambda: [sys.executable, "-c", "import sqlalchemy.orm"], env),
            FLOORS[2]: (lambda: [sys.executable, "-c", "import tracker.ingest, tracker.store"], env),
            **_commands(args.headroom, env, tmp, "", args.repeat),
        }
        if args.before:
            code = export(args.before, tmp / "before")
            commands |= _commands(args.headroom, _env(tmp / "home", code), tmp,
                                  f" ({args.before})", args.repeat)
        if args.only:
            commands = {name: run for name, run in commands.items()
                        if name.split(" (")[0] in args.only or name in FLOORS}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for make, env in commands.values():  # untimed: bytecode caches, first-run costs
            _time(make(), env)
        for _ in range(args.repeat):
            for name, (make, env) in commands.items():
                times[name].append(_time(make(), env))
    _report(times, args.repeat)


def _commands(headroom: list[str], env: dict[str, str], tmp: Path, suffix: str, repeat: int):
    """The timed commands (name -> (argv maker, environment)) on a database of their own that
    holds the sample runs; ``suffix`` tells another version's apart."""
    folder = tmp / f"logs{suffix.strip(' ()')}"
    folder.mkdir()
    db = str(folder / "bench.db")
    subprocess.run([*headroom, "ingest", str(resources_dir() / "samples"), "--db", db],
                   env=env, cwd=env["PYTHONPATH"], check=True, stdout=subprocess.DEVNULL)
    logs = iter(_small_log(folder, i) for i in range(repeat + 1))
    tables = iter(_small_table(folder, i) for i in range(repeat + 1))
    makers = {
        "runs": lambda: [*headroom, "runs", "--db", db],
        "ingest": lambda: [*headroom, "ingest", str(next(logs)), "--db", db],
        "ingest csv": lambda: [*headroom, "ingest", str(next(tables)), "--db", db],
        "size": lambda: [*headroom, "size", "--model", "llama-3.1-8b", "--method", "lora",
                         "--gpu", "rtx-4090", "--db", db],
    }
    return {name + suffix: (make, env) for name, make in makers.items()}


def _report(times: dict[str, list[tuple[float, float]]], repeat: int) -> None:
    floor = statistics.median(wall for wall, _ in times[FLOORS[0]])
    print(f"headroom commands, {repeat} runs each, interleaved (seconds):")
    print(f"{'command':<20}{'median':>8}{'best':>8}{'x floor':>9}{'CPU':>8}  target")
    for name, runs in times.items():
        walls = [wall for wall, _ in runs]
        median, cpu = statistics.median(walls), statistics.median(c for _, c in runs)
        target = TARGETS.get(name.split(" (")[0])
        verdict = "" if target is None else (
            f"<= {target:.1f} s {'met' if median <= target else 'missed'}")
        print(f"{name:<20}{median:>8.3f}{min(walls):>8.3f}{median / floor:>9.1f}{cpu:>8.3f}  "
              f"{verdict}")


if __name__ == "__main__":
    main()
