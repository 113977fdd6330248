"""The store as a team tracker: both back-ends, migrations, concurrency, lost connections."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlmodel import SQLModel

from tests.pg import fresh_database
from tracker.db.engine import SchemaError, _alembic_config, make_engine
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
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
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
    real_write = series_store.write

    def write_then_die(unit, run_id, series):
        real_write(unit, run_id, series)
        pid = unit.session.execute(text("SELECT pg_backend_pid()")).scalar()
        killer = make_engine(store.url)
        with killer.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        killer.dispose()
        return real_write(unit, run_id, series)

    monkeypatch.setattr(series_store, "write", write_then_die)
    report = ingest(store, [write_log(tmp_path / "a.jsonl", "doomed")])
    assert report.results[0].status == "error"
    assert report.results[0].reason.startswith("database connection lost")
    monkeypatch.setattr(series_store, "write", real_write)
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
