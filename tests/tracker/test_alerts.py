"""Alerts: ``headroom watch`` on real recorded loops that finish, diverge, crash and go quiet."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from desktop.launcher import main
from tests.producers import RecordedLoop
from tracker import alerts


@pytest.fixture
def hook_server():
    """A local webhook that keeps what it is sent."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", received
    server.shutdown()


def test_watch_prints_and_forwards_what_happens_to_the_runs(tmp_path, capsys, monkeypatch,
                                                            hook_server):
    url, posted = hook_server
    root = tmp_path / "runs"
    steady = RecordedLoop(root / "steady", "steady")
    steady.train(12)
    scenario = iter([
        lambda: (steady.train(8), steady.finish()),  # finishes
        lambda: _diverge_and_crash(root / "diverging"),  # a new run: inf loss, then a crash
        lambda: _start(root / "stalls", 5),  # a new run that will stop writing
        lambda: _more(root / "stalls", 5),  # it grows once more...
        lambda: None,  # ...then says nothing
    ])
    monkeypatch.setattr("tracker.cli.watch.wait", lambda _s: next(scenario)())
    written = tmp_path / "hook.txt"
    hook = (f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2] + "
            f"'\\n')\" {written} {{kind}}:{{run}}")
    code = main(["watch", str(root), "--db", str(tmp_path / "w.db"), "--looks", "6",
                 "--interval", "0", "--quiet-after", "0.0001", "--on-alert", hook,
                 "--webhook", url, "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    assert f"watching 1 run in {root}" in err
    said = [json.loads(line) for line in out.splitlines()]
    kinds = [(a["kind"], a["run"]) for a in said]
    assert ("finished", "steady") in kinds
    assert ("crashed", "diverging") in kinds
    assert [k for k in kinds if k[1] == "diverging" and k[0] == "finding"], kinds
    assert kinds.count(("quiet", "stalls")) == 1
    assert not [k for k in kinds if k[1] == "steady" and k[0] != "finished"]
    finished = next(a for a in said if a["kind"] == "finished")
    assert finished["message"].startswith("steady finished at step 20 (loss ")
    assert all(a["folder"] == str(root) for a in said)
    assert written.read_text().splitlines() == [f"{a['kind']}:{a['run']}" for a in said]
    assert [p["kind"] for p in posted] == [a["kind"] for a in said]
    assert posted[0]["text"].startswith("Headroom — ")


_loops: dict[Path, RecordedLoop] = {}


def _diverge_and_crash(folder: Path) -> None:
    loop = RecordedLoop(folder, "diverging", lr=3.0)
    loop.train(30)
    loop.crash()


def _start(folder: Path, steps: int) -> None:
    _loops[folder] = RecordedLoop(folder, "stalls")
    _loops[folder].train(steps)


def _more(folder: Path, steps: int) -> None:
    _loops[folder].train(steps)


def test_folders_choose_their_kinds_and_the_file_round_trips(tmp_path):
    config = alerts.AlertConfig(on_alert='notify-send "Headroom" {message}',
                                webhook="https://hooks.example.com/x", quiet_minutes=2.5,
                                folders={"/data/runs": ["crashed"],
                                         '/data/runs/odd "name"\x7f': ["quiet", "finding"]})
    path = tmp_path / "alerts.toml"
    alerts.save(config, path)
    assert alerts.load(path) == config
    assert config.kinds_for("/data/runs/a/headroom.jsonl") == {"crashed"}
    assert config.kinds_for('/data/runs/odd "name"\x7f/x.jsonl') == {"quiet", "finding"}
    assert config.kinds_for("/elsewhere/x.jsonl") == set(alerts.KINDS)
    path.write_text('[folders."/x"]\nkinds = ["crashed", "exploded"]\n')
    with pytest.raises(alerts.AlertConfigError, match="kinds must be a list of"):
        alerts.load(path)
    path.write_text("on_alert = \n")
    with pytest.raises(alerts.AlertConfigError, match="alerts.toml"):
        alerts.load(path)


def test_a_hook_gets_the_alert_as_arguments_never_through_a_shell(tmp_path):
    written = tmp_path / "args.json"
    alert = alerts.Alert("crashed", 7, "run; rm -rf ~", "run; rm -rf ~ crashed", "/data")
    hook = (f"{sys.executable} -c \"import json, os, sys; json.dump([sys.argv[1:], "
            f"os.environ['HEADROOM_ALERT_RUN_ID']], open({str(written)!r}, 'w'))\" "
            "{message} {unknown}")
    assert alerts.forward(alert, alerts.AlertConfig(on_alert=hook)) == []
    assert json.loads(written.read_text()) == [["run; rm -rf ~ crashed", "{unknown}"], "7"]
    failing = alerts.AlertConfig(on_alert=f"{sys.executable} -c \"raise SystemExit('no')\"",
                                 webhook="ftp://example.com/x")
    errors = alerts.forward(alert, failing)
    assert errors == [f"on_alert: {sys.executable} exited with 1: no",
                      "webhook: ftp://example.com/x is not an http(s) URL"]
