from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from core import __version__
from desktop import dialogs
from desktop.main_window import MainWindow
from desktop.services import SAMPLES
from tests.desktop.helpers import ingest_and_wait, mime_with

HF_RUNS = ("Dheena731__tinyLlama-finetune", "P4P4N1CK__whisper-large-v2-japanese-5k-steps")


def _drop(widget, mime) -> QDropEvent:
    """Deliver a drop as Qt does at the end of a drag (without a native drag loop).

    The caller keeps ``mime`` alive: the event does not own it.
    """
    event = QDropEvent(QPointF(40, 40), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    event.ignore()
    widget.dropEvent(event)
    return event


def test_dropping_run_folders_and_a_bad_file_fills_the_table_and_reports_the_error(
    qtbot, window, services, corpus, tmp_path
):
    bad = tmp_path / "trainer_state.json"
    bad.write_text('{"log_history": [{"step": 1, "loss": 2.')
    folders = [corpus / "hf_trainer" / name for name in HF_RUNS]
    assert window.central.currentWidget() is window.empty

    mime = mime_with([*folders, bad])
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000) as blocker:
        event = _drop(window, mime)
    assert event.isAccepted()

    report = blocker.args[0]
    assert [r.status for r in report.results] == ["ingested", "ingested", "error"]
    table = window.runs_panel.model
    qtbot.waitUntil(lambda: table.rowCount() == 2)
    assert {table.run(i).name for i in range(2)} == set(HF_RUNS)
    assert window.central.currentWidget() is window.splitter
    assert window.count_label.text() == "2 runs"
    panel = window.panels["ingest"]
    assert panel.isVisible()
    rows = panel.file_rows()
    error = next(r for r in rows if r[0] == "error")
    assert panel.model.item(0, 0).text() == "Not stored (1 file)"  # errors come first
    assert error[1] == "trainer_state.json" and error[3]  # the reason is shown
    assert "1 error" in panel.status.text()


def test_drag_enter_accepts_file_urls_and_rejects_plain_text(window, corpus):
    from PySide6.QtCore import QMimeData

    text = QMimeData()
    text.setText("/not/a/url")
    for mime, accepted in ((mime_with([corpus / "hf_trainer"]), True), (text, False)):
        event = QDragEnterEvent(QPoint(30, 30), Qt.DropAction.CopyAction, mime,
                                Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        event.ignore()
        QApplication.sendEvent(window, event)
        assert event.isAccepted() is accepted


def test_drop_on_the_plots_reaches_the_window(qtbot, window, services, corpus):
    """The plot canvas does not swallow drops; the window ingests them."""
    plots = window.panels["plots"]
    assert not any(w.acceptDrops() for w in (plots, plots.scroll, plots.grid))
    mime = mime_with([corpus / "hf_trainer" / HF_RUNS[0]])
    with qtbot.waitSignal(services.sig_ingest_started):
        _drop(plots.window(), mime)
    qtbot.waitUntil(lambda: not services.ingesting, timeout=30_000)


def test_sample_runs_all_ingest_and_get_selected(qtbot, window, services):
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000) as blocker:
        window.empty.sig_samples_requested.emit()
    report = blocker.args[0]
    assert report.ok and len(report.results) == len(services.sample_paths()) >= 4
    qtbot.waitUntil(lambda: len(services.selected) == len(report.results))
    assert all(r.run_id in services.selected for r in report.results)
    assert SAMPLES.is_dir()


def test_edit_commands_rename_tag_and_delete_without_touching_files(
    qtbot, window, services, corpus, monkeypatch
):
    folder = corpus / "hf_trainer" / HF_RUNS[0]
    ingest_and_wait(qtbot, services, [folder])
    table = window.runs_panel.model
    qtbot.waitUntil(lambda: table.rowCount() == 1 and bool(services.selected))
    run_id = services.selected[0]

    monkeypatch.setattr(dialogs, "ask_name", lambda parent, current: "tinyllama-lora")
    monkeypatch.setattr(dialogs, "ask_tags", lambda parent, current, count: ["lora", "baseline"])
    window.actions_["rename"].trigger()
    window.actions_["tags"].trigger()
    # The edits are written in the pool, in the order asked.
    qtbot.waitUntil(lambda: table.rowCount() == 1 and table.run(0).tags == ["baseline", "lora"])
    assert table.run(0).name == "tinyllama-lora"

    asked: list[list[str]] = []
    monkeypatch.setattr(dialogs, "confirm_delete",
                        lambda parent, names: asked.append(names) or True)
    files_before = sorted(p for p in folder.rglob("*"))
    window.actions_["delete"].trigger()
    assert asked == [["tinyllama-lora"]]
    qtbot.waitUntil(lambda: table.rowCount() == 0)
    assert services.store.run_count() == 0 and run_id not in services.selected
    assert sorted(p for p in folder.rglob("*")) == files_before


def test_delete_dialog_says_files_stay(qtbot, monkeypatch):
    shown: list[str] = []
    cancel = QMessageBox.StandardButton.Cancel
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *args, **kw: shown.append(args[2]) or cancel)
    assert dialogs.confirm_delete(None, ["a", "b"]) is False
    assert "not touched" in shown[0] and "these 2 runs" in shown[0]


def test_menus_find_select_all_and_about(qtbot, window, services, corpus, monkeypatch):
    actions = window.actions_
    assert not actions["delete"].isEnabled() and not actions["reload"].isEnabled()
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / name for name in HF_RUNS])
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 2)
    assert actions["delete"].isEnabled() and actions["reload"].isEnabled()
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus == ["&File", "&Edit", "&View", "&Tools", "&Help"]
    for action_id in ("open_files", "reload", "delete", "select_all", "find", "full_screen",
                      "quit"):
        assert not window.actions_[action_id].shortcut().isEmpty(), action_id

    window.actions_["select_all"].trigger()
    qtbot.waitUntil(lambda: len(services.selected) == 2)
    window.activateWindow()
    window.actions_["find"].trigger()
    qtbot.waitUntil(lambda: window.runs_panel.filter_edit.hasFocus())

    about: list[str] = []
    monkeypatch.setattr(QMessageBox, "about", lambda parent, title, text: about.append(text))
    window.actions_["about"].trigger()
    assert __version__ in about[0] and services.store.display_url in about[0]


def test_window_layout_and_plot_choices_persist(qtbot, composed, settings, store, tmp_path):
    first = MainWindow(composed, settings)
    qtbot.addWidget(first)
    first.show()
    screen = first.screen().availableGeometry()  # restored geometry is kept on screen
    size = (screen.width() - 30, screen.height() - 40)
    first.resize(*size)
    first.splitter.setSizes([300, 800])
    plots = first.panels["plots"]
    bar = plots.toolbar
    bar.axis_combo.setCurrentIndex(bar.axis_combo.findData("tokens"))
    bar.smooth_slider.setValue(850)
    bar.kind_combo.setCurrentIndex(bar.kind_combo.findData("gaussian"))
    bar.log_x_check.setChecked(True)
    bar.columns_combo.setCurrentIndex(2)
    plots.set_metrics(["grad_norm", "loss"])
    settings.last_folder = "/data/runs"
    sizes = first.splitter.sizes()
    first.close()

    from desktop.composition import compose
    from desktop.services import AppServices
    from desktop.settings import Settings

    again = Settings(tmp_path / "settings.ini")  # a new launch reads the same file
    second = MainWindow(compose(AppServices(store), again), again)
    qtbot.addWidget(second)
    second.show()
    assert (second.width(), second.height()) == size
    assert second.splitter.sizes() == sizes
    plots = second.panels["plots"]
    bar = plots.toolbar
    assert plots.axis == "tokens" and plots.smoothing == 0.85 and bar.smoothing_kind == "gaussian"
    assert bar.log_x and bar.columns == 3
    assert again.metrics == ["grad_norm", "loss"] and again.last_folder == "/data/runs"


def test_reload_reads_what_a_growing_log_added(qtbot, window, services, tmp_path):
    log = tmp_path / "live.jsonl"
    log.write_text('{"headroom": 1, "run": {"name": "live"}}\n{"step": 1, "loss": 3.0}\n')
    ingest_and_wait(qtbot, services, [log])
    with log.open("a") as out:
        out.write('{"step": 2, "loss": 2.5}\n{"step": 3, "loss": 2.1}\n')
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=30_000) as blocker:
        window.actions_["reload"].trigger()
    (result,) = blocker.args[0].results
    assert (result.status, result.points) == ("updated", 2)
    assert services.store.series(result.run_id, "loss").values.tolist() == [3.0, 2.5, 2.1]


def test_the_ingest_report_hides_and_returns_from_the_view_menu(qtbot, window, services, corpus):
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / HF_RUNS[0]])
    panel = window.panels["ingest"]
    toggle = next(a for a in window.menuBar().actions()[2].menu().actions()
                  if a.text() == "Ingest Report")
    assert panel.isVisible() and toggle.isChecked()
    panel.close_button.click()
    assert not panel.isVisible() and not toggle.isChecked()
    toggle.trigger()
    assert panel.isVisible()
    window.showMinimized()
    qtbot.wait(50)
    assert toggle.isChecked()


def test_paths_another_launch_hands_over_are_ingested(qtbot, window, services):
    sample = SAMPLES / "synthetic-llama3-8b-qlora-rtx4090.jsonl"
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000) as blocker:
        window.open_paths([str(sample)])
    assert [r.status for r in blocker.args[0].results] == ["ingested"]


def test_the_window_shows_before_its_database_opens_and_catches_up(qtbot, store, settings):
    from desktop.composition import compose
    from desktop.services import AppServices

    services = AppServices()  # as desktop/app.py starts: no database yet
    window = MainWindow(compose(services, settings), settings)
    qtbot.addWidget(window)
    window.show()
    assert window.central.currentWidget() is window.opening
    assert window.db_label.text() == "Opening the database…"
    assert not window.actions_["size_run"].isEnabled()
    sample = SAMPLES / "synthetic-llama3-8b-qlora-rtx4090.jsonl"
    services.ingest([str(sample)])  # a path given at launch: read once the database is open
    assert not services.ingesting
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000) as blocker:
        services.open_store(lambda: store, pytest.fail)
    assert [r.status for r in blocker.args[0].results] == ["ingested"]
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 1)
    assert window.central.currentWidget() is window.splitter
    assert window.db_label.text().startswith("Local database:")
    assert window.actions_["size_run"].isEnabled()
    services.workers.shutdown()


def test_a_database_that_cannot_open_is_said(qtbot, settings):
    from desktop.composition import compose
    from desktop.services import AppServices

    services = AppServices()
    qtbot.addWidget(MainWindow(compose(services, settings), settings))

    def refuse():
        raise RuntimeError("the database is newer than this Headroom (schema 9)\nupgrade")

    with qtbot.waitCallback() as said:
        services.open_store(refuse, said)
    said.assert_called_with("the database is newer than this Headroom (schema 9)")
    assert not services.ready
