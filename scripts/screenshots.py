"""Screenshots of the desktop app with the sample runs loaded, for the README.

Opens the real window on a temporary database and settings file, loads the
sample runs through the same ingest as a user's drop, and saves PNGs of the
views into ``docs/screenshots/``. Run it on a display, or headless under Xvfb
(real X11 fonts and rendering)::

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py [NAME...]

PNGs are written with the strongest compression Qt offers, without alpha.

Names (``plots``, ``sizing-result``...) shoot only those; none shoots them all.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
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
    from desktop.composition import compose
    from desktop.main_window import MainWindow
    from desktop.services import AppServices
    from desktop.settings import Settings
    from tracker.store import Store

    app = make_app()
    settings = Settings()
    window = MainWindow(compose(AppServices(Store(str(Path(home) / "shots.db"))), settings),
                        settings)
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
    shoot_live(app, window, Path(home))
    shoot_grid(app, window, Path(home))  # 45 more runs in the table: after the others
    shoot_projects(app, window)
    shoot_team(app, window)
    shoot_compare(app, window, Path(home))
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


GRID_SHOTS = {"plots-grid", "plots-menu", "plots-gpu"}
GRID_SIZE = (1280, 800)


def shoot_grid(app, window, home: Path) -> None:
    """A sweep of 45 synthetic LoRA runs (5 learning rates x 9 seeds) all selected at 1280x800:
    the panel grid in two columns, then the loss panel's right-click menu."""
    if ONLY and not ONLY & GRID_SHOTS:
        return
    from scripts.make_samples import simulate

    sweep = home / "sweep"
    sweep.mkdir(exist_ok=True)
    for lr in (5e-5, 1e-4, 2e-4, 4e-4, 8e-4):
        for seed in range(9):
            job = replace(_live_job(f"lr{lr:.0e}-seed{seed}", lr, seed=seed, done_steps=1500),
                          steps=1500, eval_every=500,
                          loss_end=1.15 + 0.3 * math.log10(lr / 1.5e-4) ** 2 + 0.01 * seed)
            _write(sweep / f"{job.name}.jsonl", simulate(job))
    ingest_samples(app, window, [sweep])
    window.panels["ingest"].hide()
    window.panels["findings"].hide()
    size = window.size()
    window.resize(*GRID_SIZE)
    window.splitter.setSizes([430, GRID_SIZE[0] - 430])
    select(app, window, sorted(r.name for r in window.services.store.runs()
                               if "-lr" in r.name and "seed" in r.name))
    window.tabs.setCurrentWidget(window.panels["plots"])
    settle(app, 2500)
    plots = window.panels["plots"]
    cell = plots.cells[0]
    box = cell.plot.plot.vb
    plots._on_mouse(cell, box.mapViewToScene(box.viewRect().center()))  # the readout
    shoot(app, window, "plots-grid")
    menu = plots.panel_menu(cell)
    menu.popup(cell.mapToGlobal(cell.rect().center()))
    settle(app, 600)
    shoot_screen(app, window, "plots-menu")
    menu.close()
    plots._hide_hover()
    shoot_gpu_job(app, window)
    window.resize(size)
    window.panels["findings"].show()


def shoot_gpu_job(app, window) -> None:
    """The corpus's ms-swift run with the nvidia-smi sampler beside it: one run, its GPUs'
    memory, utilisation and power in panels of their own (a band across the 8 GPUs)."""
    if not CORPUS.is_dir() or (ONLY and "plots-gpu" not in ONLY):
        return
    ingest_samples(app, window, [CORPUS / "jsonl" / "ms_swift"])
    window.panels["ingest"].hide()
    name = next(r.name for r in window.services.store.runs() if "gbs32" in r.name)
    select(app, window, [name])
    plots = window.panels["plots"]
    plots.set_metrics(["loss", "mem_used_gib/*", "gpu_util_pct/*", "power_w/*"])
    settle(app, 1500)
    shoot(app, window, "plots-gpu")
    plots.set_metrics([])


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
    """The sizing wizard started from the FSDP sample run, page by page, then "What can my card
    run?" for a QLoRA of Llama-3.1-8B on one RTX 4090, then the Calibration tab (with the corpus
    runs that record memory, when the corpus is beside the checkout). The wizard keeps its own
    size, made for a 1280x800 screen."""
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
    shoot_card(app, window)
    window.tabs.setCurrentWidget(window.panels["calibration"])
    window.splitter.setSizes([400, SIZE[0] - 400])  # the tab wide, as a user would drag it
    settle(app, 3000)
    shoot(app, window, "calibration")


def shoot_card(app, window) -> None:
    """Card mode: the cards named on the first page, the best setup they run on the last."""
    window.actions_["size_run"].trigger()
    wizard = window.wizard
    page = wizard.model_page
    page.modes["card"].setChecked(True)
    page.card_combo.setCurrentIndex(page.card_combo.findData("RTX 4090"))
    page.card_count.setValue(1)
    page.radios["preset"].setChecked(True)
    page.preset_combo.setCurrentIndex(page.preset_combo.findData("llama-3.1-8b"))
    page.preset_combo.activated.emit(page.preset_combo.currentIndex())
    shoot(app, wizard, "sizing-card-question")
    wizard.next()
    training = wizard.training_page
    for name, value in (("method", "qlora"), ("recompute", "none"), ("attention", "sdpa")):
        training.combos[name].setCurrentIndex(training.combos[name].findData(value))
    for name, value in (("micro_batch", 4), ("grad_accum", 1), ("seq_len", 4096)):
        training.spins[name].setValue(value)
    wizard.next()
    while wizard.result_page.planning:
        settle(app, 100)
    shoot(app, wizard, "sizing-card")
    page.modes["size"].setChecked(True)  # the next opening asks the usual question
    wizard.close()


def shoot_live(app, window, home: Path) -> None:
    """A watched folder while a run writes into it (its curves grow as the shot waits), beside a
    run that went quiet 26 minutes ago without an end record: running, and crashed?."""
    if ONLY and "live" not in ONLY:
        return
    from scripts.make_samples import simulate

    os.environ["HOME"] = str(home)  # the watched folder reads ~/runs, not a temp path
    runs = home / "runs"
    runs.mkdir(exist_ok=True)
    quiet = _live_job("lr3e-4", 3e-4, seed=7, done_steps=2200)
    path = runs / f"{quiet.name}.jsonl"
    _write(path, itertools.islice(simulate(quiet), 121))
    silent_since = time.time() - 26 * 60
    os.utime(path, (silent_since, silent_since))
    job = _live_job("lr1e-4", 1e-4, seed=3, done_steps=1400)
    rows, path = simulate(job), runs / f"{job.name}.jsonl"
    _write(path, itertools.islice(rows, 131))
    window.splitter.setSizes([640, SIZE[0] - 640])
    window.panels["findings"].hide()
    window.panels["watch"].show()
    window.panels["watch"].live.add_folder(str(runs))
    settle(app, 3000)
    select(app, window, [job.name])
    window.tabs.setCurrentWidget(window.panels["plots"])
    for _ in range(6):  # the training goes on while the app watches
        _write(path, itertools.islice(rows, 2))
        settle(app, 900)
    window.panels["ingest"].hide()
    shoot(app, window, "live")
    window.panels["watch"].hide()
    window.panels["findings"].show()


def _live_job(tag: str, peak_lr: float, seed: int, done_steps: int):
    """A synthetic LoRA fine-tune of Llama-3-8B on 2 A100s, ``done_steps`` into its 3,000."""
    from scripts.make_samples import Job

    step_time = 6.1
    return Job(
        name=f"synthetic-llama3-8b-lora-2xa100-{tag}",
        started=datetime.fromtimestamp(time.time() - done_steps * step_time - 95, UTC),
        shape=dict(model="meta-llama/Meta-Llama-3-8B", family="llama", n_params=8_030_261_248,
                   n_trainable_params=41_943_040, method="lora", precision="mixed-bf16",
                   optimizer="adamw", lora_rank=16, micro_batch=8, grad_accum=2, global_batch=32,
                   seq_len=4096, recompute="full", attention="flash", n_gpus=2,
                   gpu_model="A100 80GB", gpu_mem_gib=80.0, framework="transformers"),
        config={"note": "synthetic sample: a run followed live"},
        steps=3000, log_every=10, step_time_s=step_time, tokens_per_step=32 * 4096,
        loss_start=1.95, loss_end=1.22, peak_lr=peak_lr, warmup=90, mem_peak_gib=41.7,
        mem_reserved_gib=46.2, eval_every=250, seed=seed,
    )


def _write(path: Path, rows) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)


PROJECT_SIZE = (1280, 800)


def shoot_projects(app, window) -> None:
    """The Project window at 1280x800 on the two example projects: the CNC-maintenance
    decomposition (its four variants side by side), then the pretraining pipeline whose
    deadline moves the 7B variant's continued pretraining onto rented H100s."""
    if ONLY and not ONLY & {"project", "project-pipeline"}:
        return
    window.actions_["projects"].trigger()
    projects = window.project_window
    projects.resize(*PROJECT_SIZE)
    for name, example, variant in (("project", "cnc-maintenance", 0),
                                   ("project-pipeline", "pretrain-sft-preference", 1)):
        projects.planned = None
        projects.import_file(ROOT / "resources" / "projects" / f"{example}.toml")
        while projects.planned is None:
            settle(app, 100)
        projects.variant_choice.setCurrentIndex(variant)
        projects.stages.selectRow(0)
        settle(app, 1000)
        shoot(app, projects, name)
    projects.close()


def shoot_team(app, window) -> None:
    """Connect to Team Tracker… on a private PostgreSQL server (tests/pg.py) holding four
    published sample runs: the dialog after Test Connection, then the app on that database."""
    if ONLY and not ONLY & {"team-connect", "team"}:
        return
    from sqlalchemy import create_engine, text

    from desktop.views.connect_dialog import ConnectDialog
    from tests.pg import TempCluster
    from tracker.store import Store
    from tracker.team import copy_runs

    cluster = TempCluster(tcp=True)
    try:
        server = cluster.start()
    except (OSError, TypeError, subprocess.CalledProcessError):
        cluster.stop()
        print("no PostgreSQL server binaries here: the team shots are skipped")
        return
    try:
        admin = create_engine(server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text('CREATE DATABASE "headroom_lab"'))
        admin.dispose()
        team = Store(server.replace("/postgres", "/headroom_lab"))
        local = window.services.store
        copy_runs(local, team, [r.id for r in local.runs() if r.name in (FSDP, QLORA, *HF)])
        team.close()
        dialog = ConnectDialog(window.team.team, window)
        for field, value in (("host", "localhost"), ("port", str(cluster.port)),
                             ("database", "headroom_lab"), ("user", "headroom"),
                             ("password", "correct horse")):
            getattr(dialog, field).setText(value)
        dialog.show()
        dialog.test()
        while not dialog.message.text().startswith(("Connected", "Could not")):
            settle(app, 100)
        shoot(app, dialog, "team-connect")
        dialog.connect_()
        while dialog.isVisible():
            settle(app, 100)
        select(app, window, [FSDP, QLORA])
        settle(app, 1500)
        shoot(app, window, "team")
        window.team.use_local()
    finally:
        cluster.stop()


COMPARE_SHOTS = {"groups", "compare-groups", "scatter", "parallel"}
COMPARE_SIZE = (1280, 800)


def shoot_compare(app, window, home: Path) -> None:
    """Three seeds x two learning rates of a tiny GPT-2 really trained here, grouped by a pattern
    over their names (mean and std band, members faint, the groups table, the Compare tab); the
    Scatter tab on the corpus runs that record memory, the model's curves for the FSDP sample;
    parallel coordinates with a brush on the memory peak, the runs table filtered by it."""
    if ONLY and not ONLY & COMPARE_SHOTS:
        return
    from desktop.presenters.groups import Grouping
    from tests.producers import train_hf
    from tracker.record import HFCallback

    runs = [train_hf(home / "seeds" / f"gpt2-lr{lr}-seed{seed}", steps=60, eval_steps=10,
                     save_steps=1000, lr=float(lr), seed=seed, callbacks=[HFCallback()])
            for lr in ("5e-3", "1e-3") for seed in (1, 2, 3)]
    ingest_samples(app, window, [run / "headroom.jsonl" for run in runs])
    window.resize(*COMPARE_SIZE)
    window.splitter.setSizes([470, COMPARE_SIZE[0] - 470])
    for name in ("ingest", "findings", "watch"):
        window.panels[name].hide()
    compare = window.composed.compare
    compare.set_grouping(Grouping(by=r"name~-seed\d+", members=True))
    select(app, window, [run.name for run in runs])
    window.tabs.setCurrentWidget(window.panels["plots"])
    window.panels["plots"].set_metrics(["loss", "grad_norm"])
    settle(app, 2000)
    shoot(app, window, "groups")
    window.tabs.setCurrentWidget(window.panels["compare"])
    settle(app, 1500)
    shoot(app, window, "compare-groups")
    compare.set_grouping(Grouping())
    if CORPUS.is_dir():
        ingest_samples(app, window, [CORPUS / folder for folder in MEMORY_LOGS])
        window.panels["ingest"].hide()
    scatter = window.panels["scatter"]
    window.tabs.setCurrentWidget(scatter)
    scatter.colour_combo.setEditText("framework")
    select(app, window, [FSDP])
    settle(app, 4000)  # the calibration is fitted in the background
    shoot(app, window, "scatter")
    scatter.parallel_button.click()
    settle(app, 1500)
    view = scatter.parallel_view
    peak = [a.field for a in view.lines.axes].index("peak_gib")
    view.set_brush(peak, 0.45, 1.0)
    settle(app, 1500)
    shoot(app, window, "parallel")
    window.resize(*SIZE)


def _save(pixmap, path: Path) -> bool:
    """PNG in 256 colours at zlib's strongest compression (Qt's quality 0 for PNG)."""
    return small(pixmap.toImage()).save(str(path), "PNG", 0)


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


def shoot_screen(app, window, name: str) -> None:
    """What the screen shows over the window (a popup menu is a window of its own)."""
    if ONLY and name not in ONLY:
        return
    settle(app, 300)
    path = OUT / f"{name}.png"
    frame = window.frameGeometry()
    image = window.screen().grabWindow(0, frame.x(), frame.y(), frame.width(), frame.height())
    if not _save(image, path):
        raise SystemExit(f"could not write {path}")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KB")


def shoot(app, window, name: str) -> None:
    if ONLY and name not in ONLY:
        return
    settle(app, 300)
    path = OUT / f"{name}.png"
    if not _save(window.grab(), path):
        raise SystemExit(f"could not write {path}")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KB")


def small(image):
    """The image in 256 colours: each of the 256 most used 15-bit shades by its commonest colour.

    A screenshot has a few flat colours and the shades anti-aliasing makes; grouping the
    shades keeps every legend swatch exact and the file about a third of its RGB size.
    """
    import numpy as np
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage

    rgb = image.convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.array(rgb.constBits(), copy=True).view(np.uint32).reshape(
        rgb.height(), rgb.bytesPerLine() // 4)[:, :rgb.width()].ravel()
    colours, counts = np.unique(pixels, return_counts=True)
    shade = (colours >> 9 & 0x7C00) | (colours >> 6 & 0x3E0) | (colours >> 3 & 0x1F)
    by_shade = np.lexsort((-counts, shade))  # each shade's commonest colour first
    commonest = by_shade[np.unique(shade[by_shade], return_index=True)[1]]
    used = np.bincount(shade, weights=counts)[shade[commonest]]
    table = [int(c) for c in colours[commonest[np.argsort(-used)[:256]]]]
    return rgb.convertToFormat(QImage.Format.Format_Indexed8, table,
                               Qt.ImageConversionFlag.AvoidDither)


if __name__ == "__main__":
    main()
