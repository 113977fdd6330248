"""Runs for the diagnostics tests: read through the reader registry, or built from arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.diagnostics import RunData, diagnose
from core.runlog import Series


def read(path: Path, **extra) -> RunData:
    """A run as its reader reads it (the test is skipped while no reader claims the format)."""
    from tracker.readers import best_reader

    reader = best_reader(path)
    if reader is None:
        pytest.skip(f"no reader claims {path} yet")
    return RunData.from_log(reader.read(path)[0], **extra)


def series(**named: tuple) -> dict[str, Series]:
    """Series from ``name=(steps, values)`` pairs."""
    return {name: Series(name, np.asarray(s), np.asarray(v, dtype=float))
            for name, (s, v) in named.items()}


def kinds(run: RunData) -> list[str]:
    """The kinds of every finding on ``run``; rules that fail raise."""
    return [f.kind for f in diagnose(run, strict=True)]


def only(run: RunData, kind: str):
    """The one finding of ``kind`` on ``run``."""
    found = [f for f in diagnose(run, strict=True) if f.kind == kind]
    assert len(found) == 1, [f.kind for f in diagnose(run)]
    return found[0]
