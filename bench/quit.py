"""How long the app takes to quit: from File ▸ Quit to the process being gone.

Launches ``headroom gui`` (the real start-up, ``desktop.app.run_app``) on a
database of the bundled sample runs in a fresh interpreter, closes the window
as Ctrl+Q does after a delay, and times from that moment (printed by the app's
process) to the process's exit as its parent sees it. Three moments:

1. idle: the window shown, the sample runs plotted, nothing running;
2. early: 0.3 s after the window appears, while the start-up's background import
   of pandas is still running;
3. mid-ingest: while a 1,000,000-line log is being read (an ingest stops between
   files, so the read in progress is what a quit would otherwise wait for).

Run headless (``QT_QPA_PLATFORM=offscreen``) or on a display::

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/quit.py [--repeat 3]
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

# The app's own process: schedule the close, then run the app as `headroom gui` does.
DRIVER = """
import sys, time
from PySide6.QtCore import QTimer
from desktop.app import make_app, run_app

app = make_app()
delay_ms, db, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def close_window():
    window = next(w for w in app.topLevelWidgets() if w.objectName() == "mainWindow")
    print(f"quit at {time.time():.6f}", flush=True)
    window.close()

QTimer.singleShot(delay_ms, close_window)
sys.exit(run_app(db, paths))
"""


def quit_seconds(db: str, delay_ms: int, paths: list[str]) -> float:
    """Seconds from the window's close to the process's exit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    process = subprocess.Popen([sys.executable, "-c", DRIVER, str(delay_ms), db, *paths],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=ROOT, env=env)
    closed = None
    for line in process.stdout:
        if line.startswith("quit at "):
            closed = float(line.split()[2])
    process.wait()
    gone = time.time()
    if closed is None:
        raise SystemExit(f"the app exited ({process.returncode}) before it was closed")
    return gone - closed


def big_log(folder: Path, lines: int = 1_000_000) -> Path:
    path = folder / "big.jsonl"
    with path.open("w") as out:
        out.write(json.dumps({"headroom": 1, "run": {"name": "big"}}) + "\n")
        out.writelines(json.dumps({"step": s, "loss": 3 - s / lines, "lr": 1e-4}) + "\n"
                       for s in range(lines))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from core.resources import resources_dir

    with tempfile.TemporaryDirectory() as home:
        os.environ["HEADROOM_HOME"] = home  # never the user's database or settings
        db = str(Path(home) / "quit.db")
        launcher = [sys.executable, "-m", "desktop.launcher"]
        subprocess.run([*launcher, "ingest", str(resources_dir() / "samples"), "--db", db],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
                       capture_output=True)
        log = str(big_log(Path(home)))
        cases = {"idle (runs plotted)": (4000, []), "early (pandas importing)": (300, []),
                 "mid-ingest (1M-line log)": (1500, [log])}
        for name, (delay, paths) in cases.items():
            times = [quit_seconds(db, delay, paths) for _ in range(args.repeat)]
            print(f"quit, {name}: median {statistics.median(times):.2f} s "
                  f"(of {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
