"""The checkpoints panel and the checkpoint marks on the plots, on folders made by really
training tiny models on the CPU (HF Trainer and Lightning), with files removed to break them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from core.checkpoints import MISSING_WARNINGS
from core.metrics import size_text
from desktop.models.checkpoint_model import COLUMN_INDEX
from desktop.presenters.plot_marks import on_curve
from desktop.views import retention_dialog
from desktop.views.checkpoints_panel import CheckpointsPanel
from desktop.views.plots_panel import PlotsPanel
from desktop.views.retention_dialog import RetentionDialog
from desktop.widgets.badges import BADGES_ROLE
from desktop.widgets.icons import part_icon
from tests.desktop.helpers import ingest_and_wait
from tracker.checkpoints import manager

DECORATION = Qt.ItemDataRole.DecorationRole


@pytest.fixture
def panel(qtbot, services):
    p = CheckpointsPanel(services)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    return p


def _ingest(qtbot, services, path: Path) -> int:
    report = ingest_and_wait(qtbot, services, [path])
    assert report.ok, report.to_dict()
    return report.results[0].run_id


def _show(qtbot, panel, services, run_id: int, count: int) -> None:
    services.select([run_id])
    qtbot.waitUntil(lambda: panel.report is not None and panel.report.run_id == run_id
                    and panel.model.rowCount() == count)


def _rows(panel) -> dict[int, int]:
    """Step -> table row."""
    return {panel.model.row(i).checkpoint.step: i for i in range(panel.model.rowCount())}


def _icon(panel, row: int, part: str):
    return panel.model.data(panel.model.index(row, COLUMN_INDEX[part]), DECORATION)


def _badges(panel, row: int) -> list[str]:
    return panel.model.data(panel.model.index(row, COLUMN_INDEX["badges"]), BADGES_ROLE)


def _state(run: Path) -> dict:
    return json.loads((run / "trainer_state.json").read_text())


def test_parts_badges_and_the_resume_command(qtbot, panel, services, hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    _show(qtbot, panel, services, run_id, 3)
    rows = _rows(panel)
    assert sorted(rows) == [8, 16, 24]
    for row in rows.values():
        for part in ("model", "optimizer", "scheduler", "rng", "trainer_state"):
            assert _icon(panel, row, part).cacheKey() == part_icon(True).cacheKey()
        assert _icon(panel, row, "scaler").cacheKey() == part_icon(None).cacheKey()
        assert panel.model.row(row).status == "present"
    trainer_best = int(Path(_state(hf_run)["best_model_checkpoint"]).name.split("-")[1])
    assert _badges(panel, rows[trainer_best]) == ["best"]  # the Trainer ranked by eval_loss, max
    assert _badges(panel, rows[24]) == ["latest", "resume"]
    assert panel.metric_combo.currentText() == "auto: eval_loss"
    assert panel.mode_combo.currentText() == "auto: higher is better"
    assert panel.ranking.text() == "The metric the training run itself ranked by."
    assert panel.resume.heading.text() == "<b>Resume from step 24 (checkpoint-24)</b>"
    expected = f"trainer.train(resume_from_checkpoint={str(hf_run / 'checkpoint-24')!r})"
    assert panel.resume.command.text() == expected
    assert not panel.resume.warnings.isVisible()
    panel.resume.copy_button.click()
    assert QGuiApplication.clipboard().text() == expected


def test_removed_files_show_as_missing_and_move_the_resume_point(qtbot, panel, services, hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    _show(qtbot, panel, services, run_id, 3)
    (hf_run / "checkpoint-24" / "optimizer.pt").unlink()
    (hf_run / "checkpoint-16" / "rng_state.pth").unlink()
    panel.rescan_button.click()
    assert panel.rescan_button.text() == "Rescanning…"
    rows = _rows(panel)
    missing = part_icon(False).cacheKey()
    qtbot.waitUntil(lambda: _icon(panel, rows[24], "optimizer").cacheKey() == missing)
    qtbot.waitUntil(lambda: panel.rescan_button.isEnabled())
    assert _icon(panel, rows[16], "rng").cacheKey() == missing
    assert _icon(panel, rows[16], "optimizer").cacheKey() == part_icon(True).cacheKey()
    assert _badges(panel, rows[24]) == ["latest"] and "resume" in _badges(panel, rows[16])
    assert panel.resume.heading.text() == "<b>Resume from step 16 (checkpoint-16)</b>"
    assert panel.resume.reasons.text() == ("Why: latest complete checkpoint: step 16; "
                                           "step 24 is newer but lacks optimizer")
    assert panel.resume.warnings.text() == f"⚠ {MISSING_WARNINGS['rng']}"
    messages = []
    services.sig_message.connect(messages.append)
    assert not panel.resume_button.isEnabled()
    panel.table.selectRow(rows[24])  # the user insists on the newer one: copied, with the warning
    panel.resume_button.click()
    assert QGuiApplication.clipboard().text() == (
        f"trainer.train(resume_from_checkpoint={str(hf_run / 'checkpoint-24')!r})")
    assert MISSING_WARNINGS["optimizer"] in messages[-1]


def test_a_checkpoint_gone_from_disk_is_listed_as_missing(qtbot, panel, services, hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    shutil.rmtree(hf_run / "checkpoint-8")
    _show(qtbot, panel, services, run_id, 3)
    panel.rescan()
    rows = _rows(panel)
    qtbot.waitUntil(lambda: panel.model.row(rows[8]).status == "missing")
    assert _icon(panel, rows[8], "model") is None  # no files to look into: no icons
    index = panel.model.index(rows[8], COLUMN_INDEX["status"])
    assert "files are gone" in panel.model.data(index, Qt.ItemDataRole.ToolTipRole)


def test_metric_and_mode_choose_the_best_and_unclear_names_are_asked(qtbot, panel, services,
                                                                     hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    _show(qtbot, panel, services, run_id, 3)
    assert [panel.metric_combo.itemData(i) for i in range(panel.metric_combo.count())] == [
        None, "eval_loss", "loss"]
    panel.mode_combo.setCurrentIndex(panel.mode_combo.findData("min"))
    panel.mode_combo.activated.emit(panel.mode_combo.currentIndex())
    qtbot.waitUntil(lambda: panel.report.choice.mode == "min")
    lowest = min(_rows(panel), key=lambda s: panel.model.row(_rows(panel)[s])
                 .checkpoint.metrics["eval_loss"])
    assert "best" in _badges(panel, _rows(panel)[lowest])
    assert panel.mode_combo.currentText() == "lower is better" and panel.ranking.text() == ""
    assert not panel.ask.isVisible()
    services.set_ranking(run_id, "eval/score", None)  # the name does not say which way
    qtbot.waitUntil(lambda: panel.ask.isVisible())
    assert "<b>eval/score</b>" in panel.ask.question.text()
    higher = [b for b in panel.ask.findChildren(type(panel.retention_button))
              if b.text() == "Higher is better"]
    higher[0].click()
    assert services.ranking(run_id) == ("eval/score", "max")
    qtbot.waitUntil(lambda: not panel.ask.isVisible())


def test_retention_plan_deletes_only_after_confirmation_into_the_trash(
        qtbot, panel, services, hf_run, tmp_path, monkeypatch):
    run_id = _ingest(qtbot, services, hf_run)
    services.set_ranking(run_id, "eval_loss", "min")
    _show(qtbot, panel, services, run_id, 3)
    trashed: list[Path] = []
    trash = tmp_path / "trash"
    trash.mkdir()

    def to_trash(path: Path) -> None:  # stands in for the system trash
        trashed.append(path)
        shutil.move(path, trash / path.name)

    monkeypatch.setattr(manager, "to_trash", to_trash)
    dialog = RetentionDialog(services, run_id, panel.report, panel)
    qtbot.addWidget(dialog)
    dialog.show()
    # Best by eval_loss (min) and latest are step 24, the Trainer's own best is step 8: 16 goes.
    assert [Path(c.path).name for c in dialog.plan.delete] == ["checkpoint-16"]
    kept = {Path(c.path).name: why for c, why in dialog.plan.keep}
    assert kept["checkpoint-8"] == ["the training framework's own best checkpoint"]
    assert "best by eval_loss" in kept["checkpoint-24"]
    size = dialog.plan.delete[0].size_bytes
    assert dialog.summary.text() == f"1 checkpoint would go, freeing {size_text(size)}."
    assert dialog.trash_button.text() == "Move 1 to the trash…"

    monkeypatch.setattr(retention_dialog, "confirm", lambda parent, plan: False)
    dialog.trash_button.click()
    assert trashed == [] and (hf_run / "checkpoint-16").is_dir()

    monkeypatch.setattr(retention_dialog, "confirm", lambda parent, plan: True)
    dialog.trash_button.click()
    qtbot.waitUntil(lambda: dialog.result.isVisible())
    assert trashed == [hf_run / "checkpoint-16"] and not (hf_run / "checkpoint-16").exists()
    assert dialog.result.text() == f"Moved 1 checkpoint to the trash, freeing {size_text(size)}."
    assert dialog.summary.text() == "Nothing to delete: every checkpoint on disk stays."
    qtbot.waitUntil(lambda: panel.model.row(_rows(panel)[16]).status == "deleted")


def test_lightning_checkpoints_warn_that_rng_is_not_saved(qtbot, panel, services,
                                                         lightning_run):
    run_id = _ingest(qtbot, services, lightning_run)
    services.select([run_id])
    qtbot.waitUntil(lambda: panel.report is not None and panel.model.rowCount() == 3)
    names = {panel.model.row(i).name: i for i in range(3)}
    assert "last.ckpt" in names
    for row in names.values():
        assert _icon(panel, row, "rng").cacheKey() == part_icon(False).cacheKey()
        assert _icon(panel, row, "optimizer").cacheKey() == part_icon(True).cacheKey()
    assert panel.resume.warnings.text() == f"⚠ {MISSING_WARNINGS['rng']}"
    last = lightning_run / "checkpoints" / "last.ckpt"
    assert panel.resume.command.text() == f"trainer.fit(model, ckpt_path={str(last)!r})"
    assert panel.mode_combo.currentText() == "auto: lower is better"


def test_checkpoints_are_marked_on_the_loss_curve(qtbot, services, settings, composed, hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    plots = PlotsPanel(services, settings, composed.compare)
    qtbot.addWidget(plots)
    plots.resize(900, 800)
    plots.show()
    services.select([run_id])
    qtbot.waitUntil(lambda: plots.spec is not None and plots.panels
                    and plots.panels[0].overlays.checkpoints is not None)
    loss = plots.panels[0]
    assert loss.panel.metric == "loss"
    x, y = loss.overlays.checkpoints.getData()
    np.testing.assert_array_equal(x, [8, 16, 24])
    curve = next(c for c in loss.panel.curves if c.metric == "loss")
    np.testing.assert_allclose(y, on_curve(curve, np.array([8.0, 16.0, 24.0])))
    symbols = [p.symbol() for p in loss.overlays.checkpoints.points()]
    assert symbols == ["star", "d", "d"]  # the Trainer's best (step 8) is a star
    tips = [p.data() for p in loss.overlays.checkpoints.points()]
    assert tips[2] == "checkpoint checkpoint-24 (step 24) · latest"
    assert all(p.overlays.checkpoints is None for p in plots.panels[1:])  # loss panel only


def test_status_words_for_pointers_unsafe_pickles_and_links():
    from core.checkpoints import Checkpoint
    from desktop.presenters.checkpoint_rows import CheckpointItem
    from tracker.checkpoints.inspect import UNKNOWN

    def status(**kw) -> str:
        return CheckpointItem(Checkpoint("/r/ckpt", 8, **kw)).status

    assert status() == "present" and status(status="lfs") == "LFS pointer"
    assert status(status="deleted") == "deleted" and status(status="missing") == "missing"
    assert status(warnings=[f"optimizer.pt: {UNKNOWN}"]) == "unsafe to inspect"
    assert status(warnings=["optimizer.pt would run posix.system if loaded: never load it "
                            "without weights_only=True"]) == "unsafe to inspect"
    link = CheckpointItem(Checkpoint("/r/last.ckpt", 8, link_to="/r/epoch=0-step=8.ckpt"))
    assert link.status_tip.startswith("A link to /r/epoch=0-step=8.ckpt")


def test_a_resumed_run_shows_where_it_came_from(qtbot, panel, services, settings, composed, hf_run,
                                                tmp_path):
    from tests.producers import train_hf

    source = hf_run / "checkpoint-16"
    child = train_hf(tmp_path / "child", steps=20, eval_steps=4, save_steps=4, resume=source,
                     resume_from_checkpoint=str(source))  # as --resume_from_checkpoint does
    parent_id = _ingest(qtbot, services, hf_run)
    child_id = _ingest(qtbot, services, child)
    names = {r.id: r.name for r in services.store.runs()}
    services.select([child_id])
    qtbot.waitUntil(lambda: panel.report is not None and panel.report.run_id == child_id)
    assert panel.lineage.text() == f"This run resumed from checkpoint-16 of {names[parent_id]}."
    services.select([parent_id])
    qtbot.waitUntil(lambda: panel.report is not None and panel.report.run_id == parent_id)
    assert panel.lineage.text() == (f"Resumed from this run's checkpoints: {names[child_id]} "
                                    "(those checkpoints are kept).")

    plots = PlotsPanel(services, settings, composed.compare)
    qtbot.addWidget(plots)
    plots.show()
    services.select([child_id])
    qtbot.waitUntil(lambda: plots.spec is not None and bool(plots.panels)
                    and bool(plots.panels[0].overlays.boundaries))
    (line,) = plots.panels[0].overlays.boundaries
    assert line.value() == 16
    assert line.label.format == f"from {names[parent_id]} · step 16"


def test_write_times_read_short_within_the_year():
    from datetime import UTC, datetime

    from core.checkpoints import Checkpoint
    from desktop.presenters.checkpoint_rows import CheckpointItem, written

    when = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
    row = CheckpointItem(Checkpoint("/r/c", 1, written_at=when))
    local = when.astimezone()
    assert written(row, now=datetime(2026, 12, 1)) == local.strftime("%d %b %H:%M")
    assert written(row, now=datetime(2027, 1, 1)) == local.strftime("%Y-%m-%d %H:%M")
    assert written(CheckpointItem(Checkpoint("/r/c", 1))) == ""


def test_checkpoints_without_weights_are_never_offered_for_resuming(qtbot, panel, services,
                                                                    hf_run):
    for weights in hf_run.glob("checkpoint-*/model.safetensors"):
        weights.unlink()
    run_id = _ingest(qtbot, services, hf_run)
    _show(qtbot, panel, services, run_id, 3)
    assert panel.report.resume is None
    assert panel.resume.heading.text() == ("<b>No checkpoint to resume from: none on disk holds "
                                           "the model weights.</b>")
    assert not panel.resume.command.isVisibleTo(panel) and not panel.resume.warnings.isVisible()
    assert all("resume" not in _badges(panel, row) for row in _rows(panel).values())
    panel.table.selectRow(0)
    assert not panel.resume_button.isEnabled()


def test_badges_fit_their_column_and_a_rename_retitles_the_tab(qtbot, panel, services, hf_run):
    run_id = _ingest(qtbot, services, hf_run)
    _show(qtbot, panel, services, run_id, 3)
    column = COLUMN_INDEX["badges"]
    assert panel.table.columnWidth(column) >= panel.table.sizeHintForColumn(column) > 0
    services.rename(run_id, "renamed run")
    qtbot.waitUntil(lambda: "<b>renamed run</b>" in panel.title.text())
