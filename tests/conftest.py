"""Fixtures for every test: an isolated data folder, a fresh store, the corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Real training logs from public projects, beside the checkout (never copied into it).
CORPUS = Path(os.environ.get("HEADROOM_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """No test may touch the user's real database or settings."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HEADROOM_HOME", str(home))
    monkeypatch.delenv("HEADROOM_DB", raising=False)
    return home


@pytest.fixture
def store(tmp_path):
    from tracker.store import Store

    s = Store(str(tmp_path / "test.db"))
    yield s
    s.close()


@pytest.fixture(scope="session")
def pg_server():
    """URL of a PostgreSQL server for the team-tracker tests (skips where none can start)."""
    from tests.pg import server_url

    url, cluster = server_url()
    if url is None:
        pytest.skip("PostgreSQL not available (install the server or set HEADROOM_TEST_PG)")
    yield url
    if cluster is not None:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_store(request, tmp_path):
    """A fresh store on each back-end: the store and ingest suites run on both."""
    from tests.pg import fresh_database
    from tracker.store import Store

    if request.param == "sqlite":
        url = str(tmp_path / "test.db")
    else:
        url = fresh_database(request.getfixturevalue("pg_server"))
    s = Store(url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (set HEADROOM_CORPUS)")
    return CORPUS
