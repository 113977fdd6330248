"""Fixtures for every test: an isolated data folder, a fresh store, the corpus, checkpoints."""

from __future__ import annotations

import os
import shutil
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


@pytest.fixture
def trash(tmp_path, monkeypatch) -> Path:
    """The system trash, redirected into the test's folder."""
    from send2trash import plat_other

    home = tmp_path / "xdg"
    monkeypatch.setattr(plat_other, "XDG_DATA_HOME", bytes(home))
    monkeypatch.setattr(plat_other, "HOMETRASH_B", bytes(home / "Trash"))
    return home / "Trash" / "files"


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


# Checkpoint folders made by really training tiny models on the CPU, once per session
# (the checkpoint manager's tests and the app's checkpoints panel both read them).


@pytest.fixture(scope="session")
def hf_source(tmp_path_factory) -> Path:
    """HF Trainer: eval and a checkpoint every 8 steps, best model loaded at the end.

    ``greater_is_better`` makes the Trainer call the first checkpoint best, so
    best and latest differ and the Trainer's own choice can be checked.
    """
    from tests.producers import train_hf

    return train_hf(tmp_path_factory.mktemp("hf") / "out", greater_is_better=True)


@pytest.fixture
def hf_run(hf_source, tmp_path) -> Path:
    """A private copy of the HF output folder, free to damage."""
    return Path(shutil.copytree(hf_source, tmp_path / "out", symlinks=True))


@pytest.fixture(scope="session")
def lightning_source(tmp_path_factory) -> Path:
    """Lightning: ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True)."""
    from tests.producers import train_lightning

    return train_lightning(tmp_path_factory.mktemp("pl"), steps=40, loggers=("csv",))


@pytest.fixture
def lightning_run(lightning_source, tmp_path) -> Path:
    return Path(shutil.copytree(lightning_source, tmp_path / "version_0", symlinks=True))
