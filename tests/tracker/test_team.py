"""The store as a team tracker: both back-ends, migrations, concurrency, lost connections."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from tests.pg import fresh_database
from tracker.db.engine import SchemaError, _alembic_config, make_engine
from tracker.db.schema import Table
from tracker.ingest import ingest
from tracker.store import Store
from tracker.team import copy_runs


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "team.db")
    return fresh_database(request.getfixturevalue("pg_server"))


def write_log(path, name, n=50):
    rows = [json.dumps({"headroom": 1, "run": {"name": name}})]
    rows += [json.dumps({"step": s, "loss": 3 - s / 100, "mem_peak_gib": 20 + s / 10}) for s in range(1, n)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_migrations_step_up_from_the_first_revision_to_the_models(url):
    from alembic import command

    from tracker.db.engine import normalize_url

    engine = make_engine(normalize_url(url))
    config = _alembic_config(engine)
    revisions = list(reversed(list(ScriptDirectory.from_config(config).walk_revisions())))
    assert revisions[0].down_revision is None
    for revision in revisions:
        command.upgrade(config, revision.revision)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Table.metadata)
    assert diff == [], diff
    engine.dispose()


def test_newer_schema_is_refused_on_both_backends(url):
    Store(url).close()
    store = Store(url)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    store.close()
    with pytest.raises(SchemaError, match="newer than this Headroom understands"):
        Store(url)


CONCURRENT_INGEST = textwrap.dedent(
    """
    import json, sys
    from tracker.ingest import ingest
    from tracker.store import Store
    report = ingest(Store(sys.argv[1]), sys.argv[2:])
    print(json.dumps([r.status for r in report.results]))
    """
)


def test_two_processes_ingesting_the_same_files_never_duplicate(url, tmp_path):
    Store(url).close()
    logs = [str(write_log(tmp_path / f"r{i}.jsonl", f"run{i}")) for i in range(25)]
    procs = [
        subprocess.Popen([sys.executable, "-c", CONCURRENT_INGEST, url, *order],
                         stdout=subprocess.PIPE, text=True)
        for order in (logs, list(reversed(logs)))
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(r.count("ingested") for r in results) == 25
    assert sum(r.count("duplicate") for r in results) == 25
    store = Store(url)
    assert store.run_count() == 25
    assert {r.name for r in store.runs()} == {f"run{i}" for i in range(25)}
    for run in store.runs():
        assert store.series(run.id, "loss").values.size == 49


def test_lost_connection_mid_ingest_leaves_no_partial_run(pg_server, tmp_path, monkeypatch):
    from tracker.db import series as series_store

    store = Store(fresh_database(pg_server))
    real_write = series_store.write_all

    def write_then_die(unit, run_id, series):
        real_write(unit, run_id, series)
        pid = unit.session.execute(text("SELECT pg_backend_pid()")).scalar()
        killer = make_engine(store.url)
        with killer.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        killer.dispose()
        return real_write(unit, run_id, series)

    monkeypatch.setattr(series_store, "write_all", write_then_die)
    report = ingest(store, [write_log(tmp_path / "a.jsonl", "doomed")])
    assert report.results[0].status == "error"
    assert report.results[0].reason.startswith("database connection lost")
    monkeypatch.setattr(series_store, "write_all", real_write)
    assert store.run_count() == 0
    assert [r.status for r in ingest(store, [tmp_path / "a.jsonl"]).results] == ["ingested"]


def test_publish_and_take_offline_are_idempotent(pg_server, tmp_path):
    local = Store(str(tmp_path / "local.db"))
    team = Store(fresh_database(pg_server))
    report = ingest(local, [write_log(tmp_path / f"r{i}.jsonl", f"run{i}") for i in range(3)])
    ids = [r.run_id for r in report.results]
    local.set_tags(ids[0], ["baseline"])
    first = copy_runs(local, team, ids)
    assert len(first.copied) == 3 and not first.already_there
    again = copy_runs(local, team, ids)
    assert not again.copied and len(again.already_there) == 3
    published = team.run(first.copied[ids[0]])
    assert published.tags == ["baseline"] and published.name == "run0"
    assert team.series(published.id, "mem_peak_gib").values.tolist() == local.series(ids[0], "mem_peak_gib").values.tolist()
    offline = Store(str(tmp_path / "laptop.db"))
    back = copy_runs(team, offline, [r.id for r in team.runs()])
    assert len(back.copied) == 3 and offline.run_count() == 3
    # a file ingested into the copy is a duplicate of the copied run
    assert ingest(offline, [tmp_path / "r1.jsonl"]).results[0].status == "duplicate"


def test_publish_command(pg_server, tmp_path, capsys):
    from desktop.launcher import main

    local = str(tmp_path / "local.db")
    team = fresh_database(pg_server)
    ingest(Store(local), [write_log(tmp_path / "a.jsonl", "a"), write_log(tmp_path / "b.jsonl", "b", 9)])
    assert main(["publish", "--all", "--db", local, "--to", team, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["copied"]) == 2
    assert main(["publish", "a", "--db", local, "--to", team]) == 0
    out = capsys.readouterr().out
    assert "0 copied" in out and "1 already there" in out
    assert main(["take-offline", "--all", "--db", str(tmp_path / "other.db"), "--from", team]) == 0
    assert Store(str(tmp_path / "other.db")).run_count() == 2


def _published(tmp_path, n=4):
    local = Store(str(tmp_path / "local.db"))
    report = ingest(local, [write_log(tmp_path / f"r{i}.jsonl", f"run{i}", 30 + i) for i in range(n)])
    return local, [r.run_id for r in report.results]


def _drop_connection_at(monkeypatch, nth: int, drop) -> None:
    """The target's connection breaks while the ``nth`` run is copied: its rows are all
    inserted, then ``drop(unit)`` breaks the connection before the run's commit."""
    from tracker.db import copy

    real, calls = copy.copy_run, []

    def flaky(src, dst, run_id):
        calls.append(run_id)
        new_id = real(src, dst, run_id)
        if len(calls) == nth:
            drop(dst)
        return new_id

    monkeypatch.setattr(copy, "copy_run", flaky)


def _raise_lost(_unit):
    from sqlalchemy.exc import OperationalError

    raise OperationalError("INSERT INTO series_chunk", {},
                           Exception("server closed the connection unexpectedly"),
                           connection_invalidated=True)


def _assert_copied_whole(local, team, report):
    for mine, theirs in report.copied.items():
        assert team.run(theirs).name == local.run(mine).name
        assert (team.series(theirs, "loss").values.tolist()
                == local.series(mine, "loss").values.tolist())


def test_a_dropped_connection_keeps_the_runs_copied_so_far_and_reports_the_rest(
        tmp_path, monkeypatch):
    local, ids = _published(tmp_path)
    team = Store(str(tmp_path / "team.db"))
    _drop_connection_at(monkeypatch, 3, _raise_lost)
    report = copy_runs(local, team, ids)
    assert list(report.copied) == ids[:2] and report.not_copied == ids[2:]
    assert report.error == "server closed the connection unexpectedly" and not report.cancelled
    assert team.run_count() == 2  # the third run was not half-stored
    _assert_copied_whole(local, team, report)
    monkeypatch.undo()
    again = copy_runs(local, team, report.not_copied)
    assert list(again.copied) == ids[2:] and not again.error and team.run_count() == 4


def test_a_server_that_kills_the_connection_mid_copy(pg_server, tmp_path, monkeypatch):
    local, ids = _published(tmp_path)
    team = Store(fresh_database(pg_server))

    def kill(dst):
        pid = dst.session.execute(text("SELECT pg_backend_pid()")).scalar()
        killer = make_engine(team.url)
        with killer.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        killer.dispose()

    _drop_connection_at(monkeypatch, 2, kill)
    report = copy_runs(local, team, ids)
    assert list(report.copied) == ids[:1] and report.not_copied == ids[1:]
    assert "terminat" in report.error
    assert team.run_count() == 1
    _assert_copied_whole(local, team, report)


def test_a_cancel_stops_between_runs(tmp_path):
    local, ids = _published(tmp_path)
    team = Store(str(tmp_path / "team.db"))
    seen = []
    report = copy_runs(local, team, ids, progress=lambda done, total, _: seen.append((done, total)),
                       cancel=lambda: len(seen) == 2)
    assert seen == [(1, 4), (2, 4)]
    assert report.cancelled and not report.error
    assert list(report.copied) == ids[:2] and report.not_copied == ids[2:]
    assert team.run_count() == 2
    _assert_copied_whole(local, team, report)


def test_publish_command_says_what_a_dropped_connection_left(tmp_path, monkeypatch, capsys):
    from desktop.launcher import main

    local, ids = _published(tmp_path, 3)
    team = str(tmp_path / "team.db")
    _drop_connection_at(monkeypatch, 2, _raise_lost)
    assert main(["publish", "--all", "--db", local.url, "--to", team, "--json"]) == 1
    out = capsys.readouterr()
    found = json.loads(out.out)
    assert len(found["copied"]) == 1 and len(found["not_copied"]) == 2
    assert found["error"] == "server closed the connection unexpectedly"
    assert "stopped: server closed the connection unexpectedly; not copied: run" in out.err
    assert Store(team).run_count() == 1


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handler, as a command started from a terminal has it, whatever an
    earlier test in this process left (one worker once had SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_publish_command_stops_between_runs_on_ctrl_c(tmp_path, monkeypatch, capsys,
                                                      python_sigint):
    from desktop.launcher import main

    local, ids = _published(tmp_path, 3)
    team = str(tmp_path / "team.db")
    _drop_connection_at(monkeypatch, 1, lambda _dst: os.kill(os.getpid(), signal.SIGINT))
    assert main(["publish", *map(str, ids), "--db", local.url, "--to", team]) == 130
    out = capsys.readouterr()
    assert out.out.startswith("1 copied to ")
    assert f"interrupted; not copied: run {ids[1]}, {ids[2]}" in out.err
    assert Store(team).run_count() == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
