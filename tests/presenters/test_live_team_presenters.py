"""Qt-free wording and logic of live status, the watched-folders list and team connections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import make_url

from core.shape import RunShape
from core.status import live_status as live_status_of
from desktop.presenters import live_status, watch_list
from desktop.presenters.team_connection import (
    Connection,
    copy_report,
    copy_summary,
    database_label,
)
from tracker import liveness
from tracker.model import RunSummary

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def run(status: str, silent_s: float | None, stored_s_ago: float = 3600) -> RunSummary:
    last = None if silent_s is None else NOW - timedelta(seconds=silent_s)
    first = (NOW - timedelta(seconds=stored_s_ago)).replace(tzinfo=None)  # as SQLite returns it
    return RunSummary(1, "r", "csv", "/x", None, first, status, "", RunShape(), last_data_at=last)


def test_live_status_from_what_the_log_says_and_how_long_it_is_silent():
    cases = {
        ("finished", 5): "finished", ("crashed", 5): "crashed",
        ("running", 5): "running", ("running", 900): "crashed?",
        ("unknown", 5): "running", ("unknown", 900): "unknown", ("unknown", None): "unknown",
        ("running", None): "crashed?",
    }
    for (stored, silent), shown in cases.items():
        last = None if silent is None else NOW - timedelta(seconds=silent)
        assert live_status_of(stored, last, NOW, 600) == shown, (stored, silent)


def test_apply_says_when_the_next_running_run_goes_stale():
    runs = [run("running", 100), run("unknown", 550), run("finished", 1), run("running", 700),
            run("unknown", 20, stored_s_ago=10)]  # the last: copied today, never seen growing
    assert liveness.apply(runs, NOW, 600) == 50
    assert [r.status for r in runs] == ["running", "running", "finished", "crashed?", "unknown"]
    assert liveness.apply([run("finished", 1)], NOW, 600) is None
    assert live_status.cell("unknown") == "" and live_status.cell("crashed?") == "crashed?"


def test_tooltip_and_ago_read_as_people_say_them():
    stale = run("crashed?", 26 * 60)
    assert live_status.tooltip(stale, NOW) == ("crashed?: the log stopped growing before it "
                                               "recorded an end\nlast new points 26 min ago")
    unknown = run("unknown", None)
    assert live_status.tooltip(unknown, NOW) == "the log does not say how the run ended"
    assert [live_status.ago(s) for s in (2, 42, 3 * 3600, 4 * 86400)] == [
        "just now", "42 s ago", "3 h ago", "4 days ago"]


def test_watch_list_rows_and_summary():
    rows = watch_list.rows(["/data/runs", "/nfs/gone"], ["/data/other/run.jsonl"], {"/nfs/gone"},
                           {"/data/runs": (100.0, "+12 points to a")}, now=130.0)
    assert [(r.state, r.news, r.removable) for r in rows] == [
        ("watching", "30 s ago: +12 points to a", True), ("missing", "", True),
        ("run log", "", False)]
    assert watch_list.summary(2, 1, 1, 125.0, 130.0) == (
        "Watching 2 folders and 1 log of recent runs · 1 missing · looked 5 s ago")
    assert watch_list.summary(0, 0, 0, None, 1.0).startswith("Not watching anything")


def test_connection_urls_keep_odd_passwords_and_socket_folders():
    tcp = Connection("db.lab", "5433", "team", "ana")
    url = make_url(tcp.url("p@ss:w/rd"))
    assert (url.host, url.port, url.database, url.username, url.password) == (
        "db.lab", 5433, "team", "ana", "p@ss:w/rd")
    socket = make_url(Connection("/var/run/postgresql", "5432", "team", "ana").url())
    assert socket.host is None and socket.query == {"host": "/var/run/postgresql", "port": "5432"}
    assert tcp.account == "ana@db.lab:5433/team"
    assert Connection.from_settings(tcp.to_settings()) == tcp
    assert Connection.from_settings({}) is None
    assert "host" in Connection("", "5432", "x").problem()
    assert "port" in Connection("h", "99999", "x").problem()
    assert Connection("h", "5432", "x").problem() is None


def test_database_words():
    assert database_label("sqlite:////home/a/headroom.db") == "Local database: /home/a/headroom.db"
    assert database_label("postgresql+psycopg://ana:***@db/team") == (
        "Team tracker: postgresql+psycopg://ana:***@db/team")
    assert copy_summary("Published", 1, 0, "to X") == "Published 1 run to X"
    assert copy_summary("Copied", 2, 1, "here") == "Copied 2 runs here; 1 was already there"


def test_a_copy_that_stopped_early_says_why_and_what_it_left():
    from tracker.team import CopyReport

    lost = CopyReport({1: 7}, {}, [2, 3], error="server closed the connection unexpectedly")
    assert copy_report("Published", lost, "to X") == (
        "Stopped: server closed the connection unexpectedly. Published 1 run to X before that; "
        "the run being copied was not half-stored; 2 not copied")
    cancelled = CopyReport({1: 7}, {2: 8}, [3], cancelled=True)
    assert copy_report("Copied", cancelled, "here") == (
        "Cancelled: Copied 1 run here; 1 was already there; 1 not copied")
    assert copy_report("Copied", CopyReport({1: 7}), "here") == "Copied 1 run here"
