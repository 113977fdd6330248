"""Database edits from the app: written in the worker pool, in order, and a failure is said."""

from __future__ import annotations

import json
import threading

import pytest
from PySide6.QtCore import QTimer

from desktop import dialogs
from desktop.services import AppServices
from tracker.ingest import ingest


class SlowStore:
    """The test store, whose renames wait until the test lets them through (a busy server)."""

    def __init__(self, store) -> None:
        self._store = store
        self.release = threading.Event()

    def rename(self, run_id: int, name: str) -> None:
        self.release.wait(30)
        self._store.rename(run_id, name)

    def __getattr__(self, name: str):
        return getattr(self._store, name)


@pytest.fixture
def run_id(store, tmp_path) -> int:
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in [
        {"headroom": 1, "run": {"name": "first"}}, {"step": 1, "loss": 3.0},
        {"step": 2, "loss": 2.5, "summary": {"train_runtime": 1.0}}]))
    [result] = ingest(store, [log]).results
    return result.run_id


def test_a_slow_edit_leaves_the_gui_thread_free(qtbot, store, run_id):
    slow = SlowStore(store)
    services = AppServices(slow)
    changed: list[int] = []
    services.sig_runs_changed.connect(lambda: changed.append(1))
    services.rename(run_id, "renamed")  # returns while the store still waits
    ticks: list[int] = []
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    qtbot.waitUntil(lambda: len(ticks) >= 10)  # the event loop turns meanwhile
    assert store.run(run_id).name == "first" and not changed and services.editing
    slow.release.set()
    qtbot.waitUntil(lambda: bool(changed))  # views reload once it is written
    timer.stop()
    assert store.run(run_id).name == "renamed" and not services.editing
    services.workers.shutdown()


def test_edits_are_written_in_the_order_asked(qtbot, services, store, run_id):
    services.set_tags(run_id, ["a"])
    services.add_tags([run_id], ["b"])
    services.set_notes(run_id, "noted")
    qtbot.waitUntil(lambda: not services.editing)
    run = store.run(run_id)
    assert run.tags == ["a", "b"] and run.notes == "noted"


def test_an_edit_that_fails_is_said_in_the_status_bar(qtbot, window, services, store, run_id,
                                                      monkeypatch):
    def full(_run_id: int, _name: str) -> None:
        raise OSError("disk I/O error\nwhile writing the journal")

    services.sig_runs_changed.emit()
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 1)
    services.select([run_id])
    window.runs_panel.select_ids([run_id])
    monkeypatch.setattr(store, "rename", full)
    monkeypatch.setattr(dialogs, "ask_name", lambda parent, current: "renamed")
    window.actions_["rename"].trigger()
    qtbot.waitUntil(lambda: window.statusBar().currentMessage()
                    == "Could not rename the run: disk I/O error")
    assert store.run(run_id).name == "first"
