"""Trying and opening a team database before the app switches to it."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.pg import fresh_database
from tracker.db.engine import SchemaError
from tracker.store import Store
from tracker.team import TeamError, open_store, probe


def test_probe_says_what_opening_would_find_without_changing_it(pg_server, tmp_path):
    url = fresh_database(pg_server)
    assert "empty" in probe(url)
    assert "empty" in probe(url)  # the probe created nothing
    store = open_store(url)
    assert probe(url) == "Connected. 0 runs in the team database."
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    store.close()
    with pytest.raises(SchemaError, match="newer than this Headroom understands"):
        probe(url)
    with pytest.raises(SchemaError, match="newer than this Headroom understands"):
        open_store(url)


def test_unreachable_server_and_missing_database_are_said_in_one_line(pg_server):
    missing = make_url(pg_server).set(database="no_such_db").render_as_string(False)
    with pytest.raises(TeamError, match='database "no_such_db" does not exist') as err:
        probe(missing)
    assert "\n" not in str(err.value)
    refused = "postgresql+psycopg://someone:secret@127.0.0.1:1/headroom"
    with pytest.raises(TeamError, match="(?i)connection refused") as err:
        open_store(refused)
    assert "secret" not in str(err.value)


def test_a_local_file_probes_too(tmp_path):
    Store(str(tmp_path / "a.db")).close()
    assert probe(str(tmp_path / "a.db")).startswith("Connected. 0 runs")
