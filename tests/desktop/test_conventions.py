"""Desktop conventions: Open Recent, the Help menu, dialogs that remember their folder, the log
file, and a quit that waits for nothing (its time is measured by bench/quit.py)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox, QTextBrowser

from desktop.presenters import help_text
from desktop.views.data_menus import GuideMenu, RecentMenu
from tests.desktop.helpers import ingest_and_wait


def test_open_recent_lists_what_was_opened_and_opens_it_again(qtbot, window, services, settings,
                                                               corpus, monkeypatch):
    folder = str(corpus / "hf_trainer" / "Dheena731__tinyLlama-finetune")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args: folder)
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000):
        window.open_folder()
    assert settings.recent == [folder]
    menu = next(m for m in window.findChildren(RecentMenu))
    menu.fill()
    entry = next(a for a in menu.actions() if a.toolTip() == folder)
    assert entry.isEnabled() and entry.text().startswith("&1 ")
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=60_000) as blocker:
        entry.trigger()
    assert [r.status for r in blocker.args[0].results] == ["duplicate"]
    next(a for a in menu.actions() if a.text() == "Clear Menu").trigger()
    assert settings.recent == []


def test_help_shows_the_readmes_sections_shortcuts_and_a_problem_report(qtbot, window,
                                                                        monkeypatch):
    guide = next(m for m in window.findChildren(GuideMenu))
    guide.fill()
    titles = [a.text() for a in guide.actions()]
    assert "Quick start" in titles and "What it reads" in titles
    next(a for a in guide.actions() if a.text() == "Quick start").trigger()
    dialog = guide._open[-1]
    text = dialog.findChild(QTextBrowser).toPlainText()
    assert text.startswith("Quick start") and "./dev app" in text
    dialog.close()
    window.actions_["shortcuts"].trigger()
    shortcuts = window.shortcuts_dialog.findChild(QTextBrowser).toPlainText()
    assert "Open Files…" in shortcuts and "Ctrl+O" in shortcuts and "Double-click" in shortcuts
    window.shortcuts_dialog.close()
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "information", lambda *args: shown.append(args[2]))
    window.actions_["report_problem"].trigger()
    report = QGuiApplication.clipboard().text()
    assert report.startswith("Headroom ") and "PySide6 " in report
    assert "Log file: " in report and report.split("Log file: ")[1].split("\n")[0].endswith(
        "headroom.log")
    assert shown and "clipboard" in shown[0]


def test_the_readme_splits_into_its_sections():
    text, images = help_text.readme()
    sections = help_text.sections(text)
    assert images is not None and (images / "docs" / "screenshots").is_dir()
    assert [s.title for s in sections][:3] == ["Quick start", "Install", "What it reads"]
    assert all(s.markdown.startswith(f"## {s.title}") for s in sections)


def test_the_export_dialog_opens_where_the_last_export_went(qtbot, window, services, corpus,
                                                            monkeypatch, tmp_path):
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / "Dheena731__tinyLlama-finetune"])
    plots = window.panels["plots"]
    qtbot.waitUntil(lambda: plots.spec is not None)
    asked: list[str] = []
    target = tmp_path / "exports" / "mine.png"
    target.parent.mkdir()

    def save(parent, title, start, kinds):
        asked.append(start)
        return str(target), kinds.split(";;")[0]

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save)
    plots.export_dialog(".png")
    plots.export_dialog(".csv")
    assert target.is_file()
    assert Path(asked[1]).parent == target.parent  # the second opens where the first saved


def test_the_app_logs_to_a_file_in_its_data_folder():
    from desktop.app import log_to_file
    from tracker.db.engine import data_dir

    path = log_to_file()
    try:
        logging.getLogger("desktop.workers").warning("something went wrong")
        assert path == data_dir() / "headroom.log"
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = path.read_text()
        assert "Headroom " in text and "started" in text and "something went wrong" in text
    finally:
        for handler in list(logging.getLogger().handlers):
            if getattr(handler, "baseFilename", "") == str(path):
                logging.getLogger().removeHandler(handler)
                handler.close()


def test_quitting_drops_answers_still_on_their_way_and_closes_the_database(qtbot, services):
    release = threading.Event()
    got: list[int] = []
    services.load_runs(got.append)  # a load whose answer arrives after the quit

    def slow(_worker):
        release.wait(5)
        return 1

    worker = services.workers.start(slow, services._current(got.append))
    services.shutdown(wait_ms=10)  # the slow job is not waited for
    release.set()
    qtbot.waitUntil(lambda: not services.workers.busy)
    qtbot.wait(50)
    assert got == [] and worker.cancelled()
