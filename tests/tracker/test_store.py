from __future__ import annotations

import math
import sqlite3
import threading

import numpy as np
import pytest
from sqlalchemy import inspect, text

from core.runlog import RunLog
from tracker.db import series as series_store
from tracker.db.engine import SchemaError, _alembic_config, current_revision, head_revision
from tracker.store import RunNotFound, Store


@pytest.fixture
def store(backend_store):
    return backend_store


def _save(store: Store, log: RunLog, key: str = "/x/log.jsonl") -> int:
    from tracker.db import runs

    with store.session() as s:
        run_id, _ = runs.save(s, log, key, f"hash-{key}", [], None)
    return run_id


def test_the_head_read_without_alembic_is_alembics(store):
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_alembic_config(store.engine)).get_current_head()
    assert head_revision() == head == current_revision(store.engine)


def test_new_database_is_migrated_and_indexed(store):
    assert current_revision(store.engine) is not None
    with store.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        insp = inspect(conn)
        tables = set(insp.get_table_names())
        assert {"run", "series", "series_chunk", "source_file", "checkpoint", "event", "run_tag",
                "finding"} <= tables
        indexed = {tuple(ix["column_names"]) for ix in insp.get_indexes("series")}
        assert ("run_id",) in indexed and ("name",) in indexed


def test_opening_a_new_file_waits_for_the_process_creating_it(tmp_path):
    """While one process holds the creation lock and writes the fresh file, SQLite refuses a
    second connection's switch to WAL at once, without waiting: the second opener must wait."""
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "new.db"
    creator = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    lock = open(f"{path}-migrate.lock", "a")  # noqa: SIM115 (closed by the timer)
    fcntl.flock(lock, fcntl.LOCK_EX)
    creator.execute("BEGIN IMMEDIATE")

    def finish() -> None:
        creator.execute("COMMIT")
        lock.close()

    timer = threading.Timer(0.5, finish)
    timer.start()
    store = Store(str(path))
    timer.join()
    assert store.run_count() == 0
    store.close()


def test_database_from_a_newer_headroom_is_refused(tmp_path):
    path = tmp_path / "db.sqlite"
    Store(str(path)).close()
    store = Store(str(path))
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    store.close()
    with pytest.raises(SchemaError, match="newer"):
        Store(str(path))


def test_series_round_trip_keeps_nan_and_inf(store):
    log = RunLog(format="test", name="r")
    log.add_series("loss", [1, 2, 3, 4], [2.0, math.nan, math.inf, 1.0])
    run_id = _save(store, log)
    back = store.series(run_id, "loss")
    assert back.steps.tolist() == [1, 2, 3, 4]
    assert back.values[0] == 2.0 and math.isnan(back.values[1]) and math.isinf(back.values[2])
    info = store.run(run_id).series["loss"]
    assert (info.count, info.min, info.max, info.last) == (4, 1.0, 2.0, 1.0)
    assert info.first_nonfinite_step == 2


def test_million_points_stored_as_chunks_and_read_back(store):
    n = 1_000_000
    log = RunLog(format="test", name="big")
    log.add_series("loss", np.arange(n), np.linspace(5, 1, n))
    run_id = _save(store, log)
    with store.session() as s:
        chunks = s.session.execute(text("SELECT COUNT(*) FROM series_chunk")).scalar()
    assert chunks == math.ceil(n / series_store.CHUNK)
    back = store.series(run_id, "loss")
    assert len(back) == n and back.values[-1] == pytest.approx(1.0)
    assert np.array_equal(back.steps, np.arange(n))


def test_append_adds_only_new_points_and_merges_short_chunks(store):
    from tracker.db import runs

    log = RunLog(format="test", name="r")
    log.add_series("loss", [1, 2], [3.0, 2.0])
    run_id = _save(store, log)
    grown = RunLog(format="test", name="r")
    grown.add_series("loss", [1, 2, 3], [3.0, 2.0, 1.5])
    with store.session() as s:
        _, points = runs.save(s, grown, "/x/log.jsonl", "hash-2", [], runs.get(s, run_id))
    assert points == 1
    assert store.series(run_id, "loss").values.tolist() == [3.0, 2.0, 1.5]
    with store.session() as s:
        assert s.session.execute(text("SELECT COUNT(*) FROM series_chunk")).scalar() == 1


def test_changed_history_rewrites_the_series(store):
    from tracker.db import runs

    log = RunLog(format="test", name="r")
    log.add_series("loss", [1, 2], [3.0, 2.0])
    run_id = _save(store, log)
    other = RunLog(format="test", name="r")
    other.add_series("loss", [1, 2, 3], [9.0, 8.0, 7.0])
    with store.session() as s:
        runs.save(s, other, "/x/log.jsonl", "hash-3", [], runs.get(s, run_id))
    assert store.series(run_id, "loss").values.tolist() == [9.0, 8.0, 7.0]


def test_edits_tags_user_shape_and_delete(store):
    log = RunLog(format="test", name="r")
    log.add_series("loss", [1], [1.0])
    run_id = _save(store, log)
    store.rename(run_id, "renamed")
    store.set_notes(run_id, "lr too high")
    store.set_tags(run_id, ["baseline", " a100 ", ""])
    store.set_shape_field(run_id, "seq_len", 4096)
    run = store.run(run_id)
    assert (run.name, run.notes, run.tags) == ("renamed", "lr too high", ["a100", "baseline"])
    assert run.shape.seq_len == 4096 and run.shape.sources["seq_len"] == "user"
    assert store.find_run("renamed").id == run_id
    with pytest.raises(RunNotFound, match=r"did you mean 'renamed' \(run \d+\)"):
        store.find_run("renam")  # a part of a name suggests, never picks
    assert store.delete_runs([run_id]) == 1
    with pytest.raises(RunNotFound):
        store.run(run_id)
    with store.session() as s:
        assert s.session.execute(text("SELECT COUNT(*) FROM series_chunk")).scalar() == 0


def test_user_shape_fields_survive_a_reingest(store):
    from tracker.db import runs

    log = RunLog(format="test", name="r")
    log.shape.set("seq_len", 1024, "hparams.yaml")
    run_id = _save(store, log)
    store.set_shape_field(run_id, "seq_len", 2048)
    again = RunLog(format="test", name="r")
    again.shape.set("seq_len", 1024, "hparams.yaml")
    with store.session() as s:
        runs.save(s, again, "/x/log.jsonl", "hash-4", [], runs.get(s, run_id))
    assert store.run(run_id).shape.seq_len == 2048


def test_details_of_an_ingested_run_hold_its_files_config_and_stated_figures(store, tmp_path):
    from tracker.ingest import ingest

    log = tmp_path / "run.jsonl"
    log.write_text('{"headroom": 1, "run": {"name": "r", "config": {"lr": 0.1}}}\n'
                   '{"step": 1, "loss": 2.0}\n')
    run_id = ingest(store, [log]).results[0].run_id
    details = store.details(run_id)
    assert details.summary == store.run(run_id) and details.config == {"lr": 0.1}
    (source,) = details.sources
    assert source.path == str(log) and source.size == log.stat().st_size
    assert len(source.sha256) == 64 and details.parts == []
    with pytest.raises(RunNotFound):
        store.details(run_id + 1)
    finished = RunLog(format="test", name="done", summary={"train_runtime": 12.5})
    assert store.details(_save(store, finished, "/x/done.json")).final_values == {
        "train_runtime": 12.5}


def test_run_summaries_carry_the_worst_finding_severity(store):
    steps = np.arange(1, 101)
    diverged = RunLog(format="test", name="diverged")
    diverged.add_series("loss", steps, np.where(steps >= 60, math.nan, 3.0 - steps / 1000))
    clean = RunLog(format="test", name="clean")
    clean.add_series("loss", steps, 3.0 - steps / 1000)
    bad, good = _save(store, diverged, "/x/bad.jsonl"), _save(store, clean, "/x/good.jsonl")
    assert {r.id: r.severity for r in store.runs()} == {bad: None, good: None}
    store.diagnose()
    assert {r.id: r.severity for r in store.runs()} == {bad: "critical", good: None}
    assert store.run(bad).severity == store.severities()[bad]


@pytest.mark.parametrize(
    "steps",
    [np.arange(5), np.arange(0, 50, 10), np.array([1, 2]), np.array([7]), np.array([1, 2, 4, 8]),
     np.array([5, 5, 5]), np.array([3, 2, 1]), np.arange(-3, 4)],
)
def test_steps_encoding_round_trips(steps):
    blob = series_store.encode_steps(steps)
    assert np.array_equal(series_store.decode_steps(blob, len(steps)), steps)
    even = len(steps) > 2 and len(set(np.diff(steps).tolist())) == 1
    assert len(blob) == (16 if even else 8 * len(steps))


def test_uneven_steps_across_chunks_round_trip(store):
    n = series_store.CHUNK + 10
    steps = np.arange(n) * 2
    steps[-5:] += 1  # the last chunk is not evenly spaced
    log = RunLog(format="test", name="mixed")
    log.add_series("loss", steps, np.ones(n))
    run_id = _save(store, log)
    assert np.array_equal(store.series(run_id, "loss").steps, steps)
