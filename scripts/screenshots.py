"""Screenshots of the desktop app with the sample runs loaded, for the README.

Opens the real window on a temporary database and settings file, loads the
sample runs through the same ingest as a user's drop, and saves PNGs of the
views into ``docs/screenshots/``. Run it on a display, or headless under Xvfb
(real X11 fonts and rendering)::

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py [NAME...]

Names (``plots``, ``sizing-result``...) shoot only those; none shoots them all.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"
SIZE = (1440, 900)
FSDP = "synthetic-llama3-8b-fsdp-8xh100"
QLORA = "synthetic-llama3-8b-qlora-rtx4090"
HF = ("hf-gpt2-tiny-lr5e-3", "hf-gpt2-tiny-lr1e-3-cosine")
ONLY = set(sys.argv[1:])
CORPUS = Path(os.environ.get("HEADROOM_CORPUS", ROOT.parent / "shared" / "corpus"))
# Corpus logs that record memory peaks and state their shape: real runs to calibrate on.
MEMORY_LOGS = ("text_logs/megatron_lm", "text_logs/megatron_deepspeed",
               "jsonl/megatron_golden_values", "jsonl/ms_swift", "text_logs/ms_swift")


def main() -> None:
    home = tempfile.mkdtemp(prefix="headroom-shots-")
    os.environ["HEADROOM_HOME"] = home  # never the user's database or settings
    from desktop.app import make_app
    from desktop.main_window import MainWindow
    from desktop.services import AppServices
    from desktop.settings import Settings
    from tracker.store import Store

    app = make_app()
    window = MainWindow(AppServices(Store(str(Path(home) / "shots.db"))), Settings())
    window.resize(*SIZE)
    window.show()
    OUT.mkdir(parents=True, exist_ok=True)
    shoot(app, window, "empty-state")
    ingest_samples(app, window)
    views = [  # file name, runs to select, tab to show
        ("plots", [FSDP, QLORA], "plots"),
        ("plots-small-runs", list(HF), "plots"),
        ("details", [FSDP], "details"),
        ("compare", [FSDP, QLORA], "compare"),
    ]
    for name, runs, tab in views:
        select(app, window, runs)
        window.tabs.setCurrentWidget(window.panels[tab])
        settle(app, 1500)
        shoot(app, window, name)
    shoot_checkpoints_and_findings(app, window, Path(home))
    shoot_sizing(app, window)
    window.close()


def ingest_samples(app, window, paths: list[Path] | None = None) -> None:
    done: list[object] = []
    window.services.sig_ingest_finished.connect(done.append)
    window.services.ingest(paths or window.services.sample_paths())
    while not done:
        settle(app, 100)
    report = done[0]
    if not report.ok:
        raise SystemExit(f"sample ingest failed: {report.to_dict()}")
    settle(app, 1000)


CHECKPOINT_SHOTS = {"findings", "checkpoints", "checkpoint-marks", "retention"}


def shoot_checkpoints_and_findings(app, window, home: Path) -> None:
    """The FSDP sample's loss spike selected in the findings list (the plots zoom to it), then
    a tiny GPT-2 really trained here with a checkpoint every 8 steps, the newest missing its
    optimizer and scheduler, the one before its RNG state: its Checkpoints tab, its marks on
    the loss plot, Plan retention."""
    if ONLY and not ONLY & CHECKPOINT_SHOTS:
        return
    from desktop.views.retention_dialog import RetentionDialog
    from tests.producers import train_hf

    select(app, window, [FSDP])
    window.tabs.setCurrentWidget(window.panels["plots"])
    window.panels["ingest"].hide()  # read, closed: the findings get the room
    settle(app, 1500)
    window.panels["findings"].table.selectRow(0)
    settle(app, 1500)
    shoot(app, window, "findings")
    run = train_hf(home / "trained" / "gpt2-tiny-checkpoints", steps=40, eval_steps=8,
                   save_steps=8)
    for part in ("checkpoint-40/optimizer.pt", "checkpoint-40/scheduler.pt",
                 "checkpoint-32/rng_state.pth"):
        (run / part).unlink()
    ingest_samples(app, window, [run])
    window.panels["ingest"].hide()
    select(app, window, [run.name])
    settle(app, 1500)
    shoot(app, window, "checkpoint-marks")
    window.tabs.setCurrentWidget(window.panels["checkpoints"])
    settle(app, 1500)
    shoot(app, window, "checkpoints")
    panel = window.panels["checkpoints"]
    dialog = RetentionDialog(window.services, panel.run_id, panel.report, window)
    dialog.show()
    shoot(app, dialog, "retention")
    dialog.close()


def shoot_sizing(app, window) -> None:
    """The sizing wizard started from the FSDP sample run, page by page, then the Calibration
    tab (with the corpus runs that record memory, when the corpus is beside the checkout)."""
    if CORPUS.is_dir():
        ingest_samples(app, window, [CORPUS / folder for folder in MEMORY_LOGS])
    select(app, window, [FSDP])
    window.actions_["size_like"].trigger()
    wizard = window.wizard
    for page in ("model", "training", "hardware"):
        if page == "hardware":
            wizard.hardware_page.tick(["A100 80GB", "H100 SXM", "H200"])
        shoot(app, wizard, f"sizing-{page}")
        wizard.next()
    while wizard.result_page.planning:
        settle(app, 100)
    shoot(app, wizard, "sizing-result")
    wizard.close()
    window.tabs.setCurrentWidget(window.panels["calibration"])
    window.splitter.setSizes([400, SIZE[0] - 400])  # the tab wide, as a user would drag it
    settle(app, 3000)
    shoot(app, window, "calibration")


def select(app, window, names: list[str]) -> None:
    ids = {r.name: r.id for r in window.services.store.runs()}
    window.runs_panel.select_ids([ids[n] for n in names])
    settle(app, 300)


def settle(app, ms: int) -> None:
    """Let queued work (loads in the pool, redraws) finish for ``ms`` milliseconds."""
    from PySide6.QtCore import QDeadlineTimer, QEventLoop

    deadline = QDeadlineTimer(ms)
    while not deadline.hasExpired():
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def shoot(app, window, name: str) -> None:
    if ONLY and name not in ONLY:
        return
    settle(app, 300)
    path = OUT / f"{name}.png"
    if not window.grab().save(str(path)):
        raise SystemExit(f"could not write {path}")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
