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
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (set HEADROOM_CORPUS)")
    return CORPUS
