"""Live runs: the app follows watched folders while a recorder writes, and shows who is running."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from PySide6.QtCore import Qt

from core.status import STALE_AFTER_S
from desktop.live_services import LiveServices
from desktop.models.run_table_model import RunTableModel
from desktop.presenters import live_status
from desktop.presenters.run_columns import COLUMN_INDEX, make_rows
from desktop.services import AppServices
from desktop.views import watch_panel
from desktop.views.plots_panel import PlotsPanel
from tests.desktop.helpers import ingest_and_wait
from tracker.record import Recorder

POLL_MS = 150


@pytest.fixture
def live(services, settings):
    live = LiveServices(services, settings, poll_ms=POLL_MS, debounce_ms=50)
    yield live
    live._poll.stop()


class Clock:
    """A clock the test moves on: seconds since the epoch, starting now."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def write_log(path, name: str, steps: range, summary: bool = False) -> None:
    lines = [{"headroom": 1, "run": {"name": name}}]
    lines += [{"step": s, "loss": 4.0 - s / 10, "wall_time": 1.7e9 + s} for s in steps]
    if summary:
        lines.append({"step": steps[-1], "summary": {"train_runtime": 1.0}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def run_named(services, name: str):
    return next((r for r in services.runs([r.id for r in services.store.runs()])
                 if r.name == name), None)


def test_a_recorders_new_points_extend_the_drawn_curve_in_place(qtbot, services, settings, live,
                                                                 composed, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    plots = PlotsPanel(services, settings, composed.compare)
    qtbot.addWidget(plots)
    with Recorder(folder / "live.jsonl", name="live", every=1) as recorder:
        for step in range(1, 6):
            recorder.step(step, loss=4.0 - step / 10, lr=1e-3)
        with qtbot.waitSignal(services.sig_ingest_finished, timeout=20_000):
            live.add_folder(str(folder))  # read whole at once, with a report
        run = run_named(services, "live")
        assert run.status == "running"
        services.select([run.id])
        qtbot.waitUntil(lambda: bool(plots.panels) and len(plots.panels[0].items[0].xData) == 5)
        curve = plots.panels[0].items[0]
        for step in range(6, 9):
            recorder.step(step, loss=4.0 - step / 10, lr=1e-3)
        qtbot.waitUntil(lambda: len(curve.xData) == 8, timeout=20_000)
        assert plots.panels[0].items[0] is curve  # the same item, given the new points
        assert plots.spec.panels[0].curves[0].y[-1] == pytest.approx(3.2)  # curve.yData: smoothed
        assert services.selected == [run.id]  # a live ingest never takes the selection
    qtbot.waitUntil(lambda: run_named(services, "live").status == "finished", timeout=20_000)


def test_a_new_log_in_a_watched_folder_appears_as_a_run(qtbot, services, live, tmp_path):
    write_log(tmp_path / "first.jsonl", "first", range(1, 4), summary=True)
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=20_000):
        live.add_folder(str(tmp_path))
    with qtbot.waitSignal(services.sig_live_ingested, timeout=20_000) as news:
        write_log(tmp_path / "second.jsonl", "second", range(1, 4))
    assert [r.status for r in news.args[0].results] == ["ingested"]
    run = run_named(services, "second")
    assert run.status == "running" and run.series["loss"].count == 3
    assert any("new run second" in text for _when, text in live.news.values())


def test_appends_are_seen_by_polling_alone_and_a_burst_costs_few_looks(qtbot, services, settings,
                                                                       tmp_path):
    log = tmp_path / "run.jsonl"
    write_log(log, "polled", range(1, 3))
    live = LiveServices(services, settings, poll_ms=300, debounce_ms=100)
    live._notifier.blockSignals(True)  # as on a network filesystem: no notifications
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=20_000):
        live.add_folder(str(tmp_path))
    with qtbot.waitSignal(services.sig_live_ingested, timeout=20_000):
        with log.open("a") as f:
            f.write(json.dumps({"step": 3, "loss": 3.7}) + "\n")
    qtbot.waitUntil(lambda: run_named(services, "polled").series["loss"].count == 3,
                    timeout=20_000)
    live._notifier.blockSignals(False)
    live._poll.stop()
    looks = []
    real = live.watch.look
    live.watch.look = lambda places: looks.append(1) or real(places)
    with log.open("a") as f:
        for step in range(4, 24):
            f.write(json.dumps({"step": step, "loss": 3.0}) + "\n")
            f.flush()
    qtbot.waitUntil(lambda: run_named(services, "polled").series["loss"].count == 23,
                    timeout=20_000)
    assert 1 <= len(looks) <= 3


def test_a_deleted_watched_folder_is_reported_then_followed_again(qtbot, services, settings,
                                                                   live, composed, tmp_path):
    folder = tmp_path / "nfs"
    folder.mkdir()
    write_log(folder / "a.jsonl", "a", range(1, 3), summary=True)
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=20_000):
        live.add_folder(str(folder))
    panel = watch_panel.WatchPanel(live, composed.alerts, settings)
    qtbot.addWidget(panel)
    messages = []
    services.sig_message.connect(messages.append)
    shutil.rmtree(folder)
    qtbot.waitUntil(lambda: any("is gone" in m for m in messages), timeout=20_000)
    assert panel.list.topLevelItem(0).text(1) == "missing" and "1 missing" in panel.summary.text()
    assert settings.watched_folders == [str(folder)]  # kept: it may come back
    folder.mkdir()
    write_log(folder / "b.jsonl", "b", range(1, 3))
    qtbot.waitUntil(lambda: run_named(services, "b") is not None, timeout=20_000)
    qtbot.waitUntil(lambda: panel.list.topLevelItem(0).text(1) == "watching")
    assert sum("is gone" in m for m in messages) == 1


def test_a_run_whose_log_stops_growing_turns_crashed(qtbot, store, tmp_path):
    clock = Clock()
    services = AppServices(store, clock=clock)
    write_log(tmp_path / "quiet.jsonl", "quiet", range(1, 4))
    write_log(tmp_path / "done.jsonl", "done", range(1, 4), summary=True)
    ingest_and_wait(qtbot, services, [tmp_path])
    model = RunTableModel()
    # As the runs panel loads them: statuses and rows made on the worker, swapped in after.
    services.sig_runs_changed.connect(lambda: services.load_runs(model.set_rows, make_rows))
    services.load_runs(model.set_rows, make_rows)

    def statuses() -> dict[str, str]:
        column = COLUMN_INDEX["status"]
        return {model.run(i).name: model.index(i, column).data() for i in range(model.rowCount())}

    qtbot.waitUntil(lambda: statuses() == {"quiet": "running", "done": "finished"})
    # The services woke themselves for the moment the quiet run goes stale...
    assert services._stale.remainingTime() > (STALE_AFTER_S - 60) * 1000
    clock.now += STALE_AFTER_S + 1  # ...which comes, with no new ingest
    services._stale.start(0)
    qtbot.waitUntil(lambda: statuses() == {"quiet": "crashed?", "done": "finished"})
    quiet = model.index(model.row_of(run_named(services, "quiet").id), COLUMN_INDEX["status"])
    assert quiet.data(Qt.ItemDataRole.ForegroundRole).name() == live_status.COLOURS["crashed?"]
    assert "stopped growing" in quiet.data(Qt.ItemDataRole.ToolTipRole)
    assert "last new points" in quiet.data(Qt.ItemDataRole.ToolTipRole)
    services.workers.shutdown()


def test_watch_folder_command_shows_the_panel_and_remembers_the_folder(
        qtbot, window, settings, tmp_path, monkeypatch):
    write_log(tmp_path / "w.jsonl", "w", range(1, 3), summary=True)
    monkeypatch.setattr(watch_panel, "ask_folder", lambda _parent, _start: str(tmp_path))
    with qtbot.waitSignal(window.services.sig_ingest_finished, timeout=20_000):
        window.actions_["watch_folder"].trigger()
    panel = window.panels["watch"]
    assert panel.isVisible() and panel.list.topLevelItem(0).text(0).endswith(tmp_path.name)
    assert settings.watched_folders == [str(tmp_path)]
    panel.list.topLevelItem(0).setSelected(True)
    panel.remove_button.click()
    assert settings.watched_folders == [] and panel.list.topLevelItemCount() == 0


def test_the_sample_runs_read_as_ended_not_running(qtbot, services):
    report = ingest_and_wait(qtbot, services, services.sample_paths())
    runs = services.runs([r.run_id for r in report.results])
    assert len(runs) == 5 and not [r.name for r in runs if r.status in ("running", "crashed?")]
    assert {r.status for r in runs if r.format == "headroom_jsonl"} == {"finished"}


def test_a_log_that_cannot_say_is_running_only_once_seen_growing(qtbot, services, live,
                                                                  tmp_path):
    log = tmp_path / "train_metrics.csv"
    log.write_text("step,loss\n1,3.0\n2,2.9\n")  # fresh on disk, as a copy made today is

    def status() -> str:
        (only,) = services.runs([r.id for r in services.store.runs()])
        return only.status

    with qtbot.waitSignal(services.sig_ingest_finished, timeout=20_000):
        live.add_folder(str(tmp_path))
    assert status() == "unknown"
    with qtbot.waitSignal(services.sig_live_ingested, timeout=20_000):
        with log.open("a") as f:
            f.write("3,2.8\n")
    assert status() == "running"
