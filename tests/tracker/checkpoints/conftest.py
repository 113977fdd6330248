"""Checkpoint folders made by really training tiny models on the CPU, once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


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
