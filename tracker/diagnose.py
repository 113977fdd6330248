"""Diagnostics of stored runs: gather what the rules read, run them, keep the findings.

:func:`diagnose_run` builds a :class:`~core.diagnostics.RunData` from the
database (the series the rules read, events, shape, config, checkpoints, the
run it continues, comparable runs on other GPU counts), runs every rule and
replaces the run's rows in the ``finding`` table. It is an ingest step
(:func:`enrich`), so each run is checked inside its own ingest transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.diagnostics import Finding, PeerRun, RunData, diagnose
from core.diagnostics.boundaries import late_start
from core.diagnostics.throughput import GLOBAL, PER_GPU, comparable
from core.runlog import RunLog, Series
from core.shape import RunShape
from tracker.db import checkpoints as checkpoint_store
from tracker.db import findings as finding_rows
from tracker.db import runs as run_rows
from tracker.db import series as series_store
from tracker.db.unit import Unit

# Series the rules read; evaluation losses (eval/<name>loss) are read too.
READ = frozenset({
    "loss", "eval_loss", "lr", "grad_norm", "loss_scale", "nan_iters", "batch_size",
    "micro_batch_size", "mem_peak_gib", "mem_reserved_gib", "mem_used_gib", *GLOBAL, *PER_GPU,
})
THROUGHPUT = GLOBAL + PER_GPU
# The run this one continues ended at most this many logging intervals before it starts.
PREVIOUS_GAP = 5
ARCHITECTURE = ("n_layers", "hidden", "vocab", "n_params")


def enrich(unit: Unit, run_id: int, source: Path, log: RunLog) -> None:
    """Ingest step: diagnose the freshly stored run (and refresh runs it changes the verdict of).

    The reader's series are the stored ones, whole, so they are used as they are
    rather than read back from the database.
    """
    series = {name: s for name, s in log.series.items() if _wanted(name)}
    diagnose_run(unit, run_id, series=series)


def diagnose_run(unit: Unit, run_id: int, *, refresh_peers: bool = True,
                 series: dict[str, Series] | None = None) -> list[Finding]:
    """Run every rule on a stored run and store its findings in place of the previous ones."""
    data = run_data(unit, run_id, series=series)
    findings = diagnose(data)
    finding_rows.replace(unit, run_id, findings)
    if refresh_peers:
        # A run on fewer GPUs changes the verdict on comparable runs that used more.
        for peer_id in _scaled_up_peers(unit, run_id, data.shape):
            diagnose_run(unit, peer_id, refresh_peers=False)
    return findings


def load(unit: Unit, run_id: int) -> list[Finding]:
    """A run's stored findings, as the rules ordered them."""
    return finding_rows.load(unit, run_id)


# Gathering a run's data


def run_data(unit: Unit, run_id: int, *, related: bool = True,
             series: dict[str, Series] | None = None) -> RunData:
    """What the rules read of a stored run; ``related`` adds the run it continues and its peers.
    ``series`` saves reading back what the caller already holds."""
    run = run_rows.get(unit, run_id)
    if run is None:
        raise LookupError(f"no run with id {run_id}")
    data = RunData(
        series=series if series is not None else _series(unit, run_id, _wanted),
        events=run_rows.events(unit, run_id),
        shape=RunShape.from_dict(run.shape), config=dict(run.config),
        checkpoints=checkpoint_store.load(unit, run_id), name=run.name,
    )
    if related:
        previous = _previous(unit, run, data)
        data.previous = None if previous is None else run_data(unit, previous, related=False)
        data.peers = _peers(unit, run_id, data)
    return data


def _wanted(name: str) -> bool:
    return name in READ or (name.startswith("eval/") and name.endswith("loss"))


def _series(unit: Unit, run_id: int, wanted: Callable[[str], bool]) -> dict[str, Series]:
    out = {}
    for row in series_store.rows_of(unit, run_id):
        if wanted(row.name):
            steps, values, walls = series_store.read(unit, row.id)
            out[row.name] = Series(row.name, steps, values, row.original_name, walls)
    return out


def _previous(unit: Unit, run: Any, data: RunData) -> int | None:
    """The run this one continues: named by lineage, else the run that stopped where it starts."""
    if run.resumed_from:
        owner = checkpoint_store.owners(unit, [run.resumed_from]).get(run.resumed_from)
        if owner is not None and owner[0] != run.id:
            return owner[0]
    loss = data.get("loss")
    late = None if loss is None else late_start(loss)
    if late is None:
        return None
    first, gap = late[0], PREVIOUS_GAP * late[1]
    rows = run_rows.loss_ending_between(unit, run.id, first - gap, first)
    near = [other for other, path, shape in rows
            if _related(run.source_path, path, RunShape.from_dict(shape), data.shape)]
    return near[0] if near else None


def _related(mine_path: str, path: str, shape: RunShape, mine: RunShape) -> bool:
    """Same experiment: logs in sibling folders, or the same architecture."""
    same_place = Path(path).parent.parent == Path(mine_path).parent.parent
    arch = [(getattr(mine, f), getattr(shape, f)) for f in ARCHITECTURE]
    same_model = any(a for a, _ in arch) and all(a is None or b is None or a == b for a, b in arch)
    return same_place or same_model


def _peers(unit: Unit, run_id: int, data: RunData) -> list[PeerRun]:
    """Comparable runs on fewer GPUs, with their throughput series."""
    if not data.shape.n_gpus or not any(data.get(n) is not None for n in THROUGHPUT):
        return []
    peers = []
    for other, shape, name in _comparable(unit, run_id, data.shape):
        if shape.n_gpus < data.shape.n_gpus:
            series = _series(unit, other, lambda n: n in THROUGHPUT)
            if series:
                peers.append(PeerRun(f"run {other} ({name})", shape, series))
    return peers


def _scaled_up_peers(unit: Unit, run_id: int, shape: RunShape) -> list[int]:
    if not shape.n_gpus:
        return []
    return [other for other, theirs, _ in _comparable(unit, run_id, shape)
            if theirs.n_gpus > shape.n_gpus]


def _comparable(unit: Unit, run_id: int, shape: RunShape) -> list[tuple[int, RunShape, str]]:
    out = []
    for other, stored, name in run_rows.shapes_except(unit, run_id):
        theirs = RunShape.from_dict(stored)
        if comparable(shape, theirs):
            out.append((other, theirs, name))
    return out


