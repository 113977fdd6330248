"""Alerts in the app: a watched folder's run finishes or crashes, and the user is told."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import Qt

from tests.desktop.helpers import ingest_and_wait
from tests.producers import RecordedLoop
from tracker import alerts


@pytest.fixture
def watched(tmp_path, settings):
    folder = tmp_path / "runs"
    folder.mkdir()
    settings.watched_folders = [str(folder)]
    return folder


def _looked(qtbot, service) -> None:
    qtbot.waitUntil(lambda: not service._looking, timeout=10_000)


def test_a_watched_run_that_finishes_or_crashes_is_announced(qtbot, window, services, composed,
                                                             watched, tmp_path):
    from desktop.views.alert_views import AlertIndicator

    service = composed.alerts
    written = tmp_path / "hook.txt"
    service.set_config(alerts.AlertConfig(
        on_alert=f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2])\""
                 f" {written} {{kind}}"))
    _looked(qtbot, service)  # the first look learns what is there
    indicator = window.findChild(AlertIndicator)
    assert indicator.isHidden()
    loop = RecordedLoop(watched / "steady", "steady")
    loop.train(10)
    loop.finish()
    with qtbot.waitSignal(service.sig_alert, timeout=10_000) as told:
        ingest_and_wait(qtbot, services, [watched / "steady"])
    alert = told.args[0]
    assert (alert.kind, alert.run, alert.folder) == ("finished", "steady", str(watched))
    assert not indicator.isHidden() and indicator.text() == "⚠ 1 alert"
    qtbot.waitUntil(lambda: written.exists() and written.read_text() == "finished",
                    timeout=10_000)
    indicator._fill()
    first = indicator.menu().actions()[0]
    assert first.text().startswith("finished: steady finished at step 10 (loss ")
    first.trigger()
    qtbot.waitUntil(lambda: services.selected == [alert.run_id], timeout=5_000)


def test_a_folder_gets_only_the_kinds_it_wants(qtbot, services, composed, watched):

    service = composed.alerts
    service.set_config(alerts.AlertConfig(folders={str(watched): ["crashed"]}))
    _looked(qtbot, service)
    told = []
    service.sig_alert.connect(told.append)
    finished = RecordedLoop(watched / "a", "fine")
    finished.train(5)
    finished.finish()
    crashed = RecordedLoop(watched / "b", "broken")
    crashed.train(5)
    crashed.crash()
    ingest_and_wait(qtbot, services, [watched / "a", watched / "b"])
    qtbot.waitUntil(lambda: bool(told), timeout=10_000)
    _looked(qtbot, service)
    assert [(a.kind, a.run) for a in told] == [("crashed", "broken")]


def test_the_dialog_writes_what_each_folder_wants(qtbot, composed, settings, watched):
    from desktop.views.alert_views import AlertsDialog

    service = composed.alerts
    dialog = AlertsDialog(service, settings)
    qtbot.addWidget(dialog)
    dialog.table.item(0, list(alerts.KINDS).index("finished")).setCheckState(
        Qt.CheckState.Unchecked)
    dialog.webhook.setText("https://hooks.example.com/abc")
    dialog.accept()
    saved = alerts.load()
    assert saved.webhook == "https://hooks.example.com/abc"
    assert saved.folders == {str(watched): ["crashed", "finding", "quiet"]}
