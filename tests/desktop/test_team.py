"""The team tracker in the app, on a private PostgreSQL server: connect, remember, copy, lose it."""

from __future__ import annotations

import json

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from desktop.composition import compose
from desktop.main_window import MainWindow
from desktop.presenters.team_connection import Connection
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.views import team_commands
from desktop.views.connect_dialog import ConnectDialog
from tests.desktop.helpers import ingest_and_wait
from tests.pg import fresh_database
from tracker.ingest import ingest
from tracker.store import Store

PASSWORD = "s3cret-pw"  # the private server trusts its user; the password only travels


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.saved.get((service, username))

    def set_password(self, service, username, password):
        self.saved[(service, username)] = password

    def delete_password(self, service, username):
        self.saved.pop((service, username), None)


@pytest.fixture
def vault():
    """A keyring that keeps passwords in memory, as the system's would."""
    before = keyring.get_keyring()
    fake = MemoryKeyring()
    keyring.set_keyring(fake)
    yield fake
    keyring.set_keyring(before)


@pytest.fixture
def no_keyring():
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def team_url(pg_server):
    return fresh_database(pg_server)


def connection_to(url: str) -> Connection:
    u = make_url(url)
    host = u.query.get("host") or u.host
    return Connection(host, str(u.query.get("port") or u.port or 5432), u.database, u.username)


def fill(dialog: ConnectDialog, connection: Connection) -> None:
    dialog.host.setText(connection.host)
    dialog.port.setText(connection.port)
    dialog.database.setText(connection.database)
    dialog.user.setText(connection.user)
    dialog.password.setText(PASSWORD)


def write_log(path, name: str):
    rows = [{"headroom": 1, "run": {"name": name}}]
    rows += [{"step": s, "loss": 3 - s / 100, "mem_peak_gib": 20 + s / 10} for s in range(1, 30)]
    rows.append({"step": 29, "summary": {"train_runtime": 3.0}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def connect(qtbot, window, url: str) -> None:
    """Connect the window to ``url`` through the dialog's own steps."""
    dialog = ConnectDialog(window.team.team, window)
    qtbot.addWidget(dialog)
    fill(dialog, connection_to(url))
    with qtbot.waitSignal(window.services.sig_database_changed, timeout=20_000):
        dialog.connect_()
    assert dialog.result() == ConnectDialog.DialogCode.Accepted


def open_window(qtbot, store: Store, settings: Settings) -> MainWindow:
    window = MainWindow(compose(AppServices(store), settings), settings)
    qtbot.addWidget(window)
    window.show()
    return window


def test_dialog_tests_connects_and_remembers_without_the_password_in_settings(
        qtbot, window, settings, team_url, vault, tmp_path):
    dialog = ConnectDialog(window.team.team, window)
    qtbot.addWidget(dialog)
    assert dialog.remember.isEnabled() and dialog.remember.isChecked()
    dialog.test()  # an empty form says what is missing, and tries nothing
    assert "host" in dialog.message.text()
    fill(dialog, connection_to(team_url))
    dialog.test()
    qtbot.waitUntil(lambda: dialog.message.text().startswith("Connected."), timeout=20_000)
    assert "empty" in dialog.message.text()
    with qtbot.waitSignal(window.services.sig_database_changed, timeout=20_000):
        dialog.connect_()
    assert window.team.team.on_team and window.services.remote
    assert window.db_label.text().startswith("Team tracker: postgresql+psycopg://")
    assert PASSWORD not in window.db_label.text()
    account = connection_to(team_url).account
    assert vault.saved == {("Headroom team tracker", account): PASSWORD}
    settings.sync()
    stored = (tmp_path / "settings.ini").read_text()
    assert connection_to(team_url).database in stored and PASSWORD not in stored
    assert window.actions_["use_local"].isEnabled()
    window.actions_["use_local"].trigger()
    assert not window.services.remote and window.db_label.text().startswith("Local database:")


def test_the_app_reconnects_at_start_with_the_keyring_password(qtbot, store, settings, team_url,
                                                              vault, monkeypatch):
    connection = connection_to(team_url)
    settings.set_team_connection(connection.to_settings())
    settings.team_active = True
    vault.set_password("Headroom team tracker", connection.account, PASSWORD)
    monkeypatch.setattr("tracker.db.engine.default_url", lambda: store.url)
    asked = []
    monkeypatch.setattr(team_commands, "ask_password", lambda *a: asked.append(a) or PASSWORD)
    window = open_window(qtbot, store, settings)
    qtbot.waitUntil(lambda: window.team.team.on_team, timeout=20_000)
    assert asked == []  # the keyring had it


def test_without_a_keyring_the_password_is_asked_each_time(qtbot, store, settings, team_url,
                                                           no_keyring, monkeypatch, tmp_path):
    monkeypatch.setattr("tracker.db.engine.default_url", lambda: store.url)
    asked = []
    monkeypatch.setattr(team_commands, "ask_password", lambda *a: asked.append(a) or PASSWORD)
    window = open_window(qtbot, store, settings)
    dialog = ConnectDialog(window.team.team, window)
    qtbot.addWidget(dialog)
    assert not dialog.remember.isEnabled() and "asked" in dialog.remember.text()
    fill(dialog, connection_to(team_url))
    with qtbot.waitSignal(window.services.sig_database_changed, timeout=20_000):
        dialog.connect_()
    window.close()
    settings.sync()
    assert PASSWORD not in (tmp_path / "settings.ini").read_text()
    again = open_window(qtbot, Store(store.url), Settings(tmp_path / "settings.ini"))
    qtbot.waitUntil(lambda: again.team.team.on_team, timeout=20_000)
    assert len(asked) == 1


def test_a_newer_schema_and_a_missing_database_are_refused_with_a_message(
        qtbot, window, team_url, pg_server, vault):
    newer = Store(team_url)
    with newer.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    newer.close()
    dialog = ConnectDialog(window.team.team, window)
    qtbot.addWidget(dialog)
    fill(dialog, connection_to(team_url))
    dialog.connect_()
    qtbot.waitUntil(lambda: "Could not connect" in dialog.message.text(), timeout=20_000)
    assert "newer than this Headroom understands" in dialog.message.text()
    assert not window.services.remote and dialog.connect_button.isEnabled()
    dialog.database.setText("no_such_database")
    dialog.test()
    qtbot.waitUntil(lambda: "does not exist" in dialog.message.text(), timeout=20_000)


def test_publish_and_take_offline_through_the_app(qtbot, window, services, settings, team_url,
                                                  vault, tmp_path):
    report = ingest_and_wait(qtbot, services, [write_log(tmp_path / f"r{i}.jsonl", f"run{i}")
                                               for i in range(2)])
    local_ids = [r.run_id for r in report.results]
    settings.set_team_connection(connection_to(team_url).to_settings())
    window.team.team.connection = connection_to(team_url)
    vault.set_password("Headroom team tracker", connection_to(team_url).account, PASSWORD)
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 2)
    window.runs_panel.select_ids(local_ids)
    actions = window.actions_
    assert actions["publish"].isEnabled() and not actions["take_offline"].isEnabled()
    with qtbot.waitSignal(services.sig_message, timeout=20_000,
                          check_params_cb=lambda m: m.startswith("Published")) as said:
        window.actions_["publish"].trigger()
    assert said.args[0].startswith("Published 2 runs to postgresql+psycopg://")
    assert Store(team_url).run_count() == 2
    with qtbot.waitSignal(services.sig_message, timeout=20_000,
                          check_params_cb=lambda m: m.startswith("Published")) as said:
        window.actions_["publish"].trigger()
    assert said.args[0].endswith("0 runs to " + window.team.team.team_store.display_url
                                 + "; 2 were already there")
    ingest(Store(team_url), [write_log(tmp_path / "theirs.jsonl", "theirs")])
    assert window.team.team.use_team()
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 3)
    theirs = next(i for i in range(3) if window.runs_panel.model.run(i).name == "theirs")
    window.runs_panel.select_ids([window.runs_panel.model.run(theirs).id])
    assert actions["take_offline"].isEnabled() and not actions["publish"].isEnabled()
    with qtbot.waitSignal(services.sig_message, timeout=20_000,
                          check_params_cb=lambda m: m.startswith("Copied")) as said:
        window.actions_["take_offline"].trigger()
    assert said.args[0] == "Copied 1 run into the local database"
    names = sorted(r.name for r in window.team.team.home.runs())
    assert names == ["run0", "run1", "theirs"]


def test_a_lost_connection_is_said_and_the_app_keeps_working(qtbot, window, services, team_url,
                                                            pg_server, vault, tmp_path,
                                                            monkeypatch):
    from tracker.db import series as series_store

    connect(qtbot, window, team_url)
    team = window.team.team.team_store
    real_write = series_store.write_all

    def write_then_die(unit, run_id, series):
        real_write(unit, run_id, series)
        pid = unit.session.execute(text("SELECT pg_backend_pid()")).scalar()
        with team.engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        return real_write(unit, run_id, series)

    monkeypatch.setattr(series_store, "write_all", write_then_die)
    report = ingest_and_wait(qtbot, services, [write_log(tmp_path / "a.jsonl", "doomed")])
    (result,) = report.results
    assert result.status == "error" and result.reason.startswith("database connection lost")
    assert "nothing of this file was stored" in window.panels["ingest"].file_rows()[0][3]
    monkeypatch.setattr(series_store, "write_all", real_write)
    assert team.run_count() == 0  # no half-stored run
    assert ingest_and_wait(qtbot, services, [tmp_path / "a.jsonl"]).results[0].status == "ingested"
    # The server stops taking connections: the app says so and offers the local database.
    asked = []
    monkeypatch.setattr(team_commands, "ask_switch_back", lambda _w, why: asked.append(why) or True)
    name = make_url(team_url).database
    admin = create_engine(pg_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
        conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = :name"), {"name": name})
    try:
        with qtbot.waitSignal(services.sig_database_changed, timeout=30_000):
            window.runs_panel.reload()
        assert asked and "not currently accepting connections" in asked[0]
        assert not services.remote and services.run_count() == 0
        ingest_and_wait(qtbot, services, [write_log(tmp_path / "b.jsonl", "local")])
        qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 1)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.dispose()
