"""Steps that enrich a run inside its ingest transaction, after its logs are stored.

Each step is named "module:function"; the function takes ``(unit, run_id,
source, log)`` and may add rows for the run (checkpoints found beside the log,
diagnostics of its series). A step that raises fails the whole file, so a run
is never stored without what its steps add. Steps are imported only when run.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from core.runlog import RunLog
from tracker.db.unit import Unit

# Diagnostics come last: they read the checkpoints the steps before them stored.
STEPS: tuple[str, ...] = ("tracker.checkpoints.manager:enrich", "tracker.diagnose:enrich")


def enrich(unit: Unit, run_id: int, source: Path, log: RunLog) -> None:
    """Run every registered step on a freshly stored run."""
    for spec in STEPS:
        module, _, function = spec.partition(":")
        getattr(importlib.import_module(module), function)(unit, run_id, source, log)
