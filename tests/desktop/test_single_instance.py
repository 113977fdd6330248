"""One window per database: a second launch hands its paths to the first and exits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from PySide6.QtCore import QDir

from desktop.single_instance import InstanceServer, _paths, hand_over, server_name
from tests.conftest import ROOT
from tracker.db.engine import normalize_url


@pytest.fixture
def server(qtbot, tmp_path):
    name = server_name(normalize_url(str(tmp_path / "one.db")))
    srv = InstanceServer(name)
    assert srv.listening
    yield srv
    srv.close()


def test_a_second_launch_hands_its_paths_over_and_exits(qtbot, server, tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"step": 1, "loss": 2.0}\n')
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    second = [sys.executable, "-m", "desktop.launcher", "gui", "run.jsonl",
              "--db", str(tmp_path / "one.db")]
    with qtbot.waitSignal(server.sig_paths, timeout=60_000) as blocker:
        launch = subprocess.Popen(second, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
    _, err = launch.communicate(timeout=60)
    assert launch.returncode == 0, err
    assert "handed over" in err
    assert blocker.args[0] == [str(log)]  # made absolute: the running app has another cwd
    assert not (tmp_path / "one.db").exists()  # the second launch never opened the database


def test_another_database_is_another_instance(server, tmp_path):
    assert not hand_over(server_name(normalize_url(str(tmp_path / "two.db"))), [])


@pytest.mark.skipif(sys.platform == "win32", reason="a crashed app leaves a socket file on Unix")
def test_a_socket_left_by_a_crashed_app_is_taken_over(qtbot, tmp_path):
    name = server_name(normalize_url(str(tmp_path / "crashed.db")))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(os.path.join(QDir.tempPath(), name))  # bound, never listening: as after a crash
    stale.close()
    assert not hand_over(name, ["x"])
    srv = InstanceServer(name)
    try:
        assert srv.listening
        with qtbot.waitSignal(srv.sig_paths) as blocker:
            assert hand_over(name, [])
        assert blocker.args[0] == []
    finally:
        srv.close()


def test_anything_but_a_list_of_paths_is_ignored():
    assert _paths(b'{"paths": ["/a", "/b"]}') == ["/a", "/b"]
    for junk in (b"", b"not json", b"[1, 2]", b'{"paths": "/a"}', b'{"paths": [1]}'):
        assert _paths(junk) is None
