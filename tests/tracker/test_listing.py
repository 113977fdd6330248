"""``headroom runs`` read with sqlite3 says byte for byte what the store's ORM path says."""

from __future__ import annotations

import json
import sqlite3

import pytest

from core.resources import resources_dir
from desktop.launcher import main
from tracker.db import listing
from tracker.db.engine import normalize_url
from tracker.store import Store


def _log(path, name: str, config: dict, steps: int, loss: str = "2.0") -> None:
    lines = [json.dumps({"headroom": 1, "run": {"name": name, "config": config}})]
    lines += [f'{{"step": {s}, "loss": {loss}, "mem_peak_gib": {10 + s}}}' for s in range(1, steps)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def db(tmp_path) -> str:
    """Sample runs with findings, tags, plans (one a string that reads as JSON), a NaN loss,
    a run still running (so --stale-after moves it) and one stored before colours were kept."""
    _log(tmp_path / "planned.jsonl", "planned", {"plan": {"hash": "ab12", "device_gib": 20.5}}, 5)
    _log(tmp_path / "odd.jsonl", "odd\tname", {"plan": '{"hash": "not an object"}'}, 3, "NaN")
    _log(tmp_path / "live.jsonl", "live", {}, 2)
    path = str(tmp_path / "runs.db")
    store = Store(path)
    from tracker.ingest import ingest

    ingest(store, [resources_dir() / "samples", *sorted(tmp_path.glob("*.jsonl"))])
    store.set_tags(1, ["baseline", "a-tag"])
    store.set_tags(3, ["lora"])
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE run SET colour = NULL WHERE id = 2")
    return path


def _cli(capsys, args: list[str]) -> str:
    assert main(args) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("extra", [[], ["--json"], ["--stale-after", "0"],
                                   ["--json", "--stale-after", "0"]])
def test_the_sqlite3_listing_prints_what_the_orm_path_prints(capsys, monkeypatch, db, extra):
    assert listing.summaries(normalize_url(db)) is not None  # the sqlite3 path answers
    fast = _cli(capsys, ["runs", "--db", db, *extra])
    monkeypatch.setattr(listing, "summaries", lambda url: None)  # the store's path
    slow = _cli(capsys, ["runs", "--db", db, *extra])
    assert fast == slow
    assert "planned" in fast and "odd\\tname" in fast and len(fast.splitlines()) > 8


def test_the_summaries_equal_the_stores(db):
    store = Store(db)
    try:
        assert listing.summaries(normalize_url(db)) == store.runs()
    finally:
        store.close()


def test_other_databases_are_left_to_the_store(tmp_path, db):
    assert listing.summaries(normalize_url(str(tmp_path / "missing.db"))) is None
    assert listing.summaries("postgresql://user@localhost/headroom") is None
    assert listing.summaries(f"sqlite:///{db}?mode=ro") is None
    (tmp_path / "text.db").write_text("not a database")
    assert listing.summaries(normalize_url(str(tmp_path / "text.db"))) is None
    with sqlite3.connect(db) as conn:  # an older schema: the store migrates it first
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    assert listing.summaries(normalize_url(db)) is None
