"""The checkpoint manager: scan a run's checkpoints, answer best / latest / resume, plan retention.

Scans run at ingest (an enrichment step, inside the run's transaction) and on
demand (:func:`rescan`); the answers come from the stored rows, so the app can
ask them from a worker thread without touching the disk. Deleting needs an
explicit confirmation and goes to the system trash.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.checkpoints import (
    Checkpoint,
    Choice,
    best,
    choose_metric,
    is_eval_metric,
    latest,
    metrics_at,
)
from core.resume import ResumeAdvice, recommend
from core.retention import RetentionPlan, plan
from core.runlog import CheckpointRef, RunLog, Series
from tracker.checkpoints.discover import discover, run_folder
from tracker.checkpoints.lineage import Lineage, lineage, update_lineage
from tracker.checkpoints.ownership import OUTSIDE, claimed, refusal, shown_path
from tracker.checkpoints.trash import to_trash
from tracker.db import checkpoints as rows
from tracker.db.unit import Unit
from tracker.store import Store


@dataclass
class Report:
    """A run's checkpoints with the answers: best, latest and where to resume."""

    run_id: int
    checkpoints: list[Checkpoint]
    choice: Choice
    best: Checkpoint | None = None
    latest: Checkpoint | None = None
    resume: ResumeAdvice | None = None
    origin: Lineage | None = None


@dataclass
class Deletion:
    """What a confirmed retention plan did: checkpoints trashed, and those that failed."""

    trashed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    freed_bytes: int = 0


def scan(source: Path, config: dict, refs: Iterable[CheckpointRef],
         series: Mapping[str, Series]) -> list[Checkpoint]:
    """The run's checkpoints on disk and in its logs, with its metrics at each step; those
    that are not provably the run's own say so in a note."""
    checkpoints = discover(source, config, refs)
    for ckpt in checkpoints:
        if refusal(replace(ckpt, path=shown_path(ckpt.path)), source) and OUTSIDE not in ckpt.notes:
            ckpt.notes.append(OUTSIDE)
        if ckpt.step is None:
            continue
        values, steps = metrics_at(series, ckpt.step)
        for name, value in values.items():
            if name not in ckpt.metrics:  # a value the checkpoint or its log states wins
                ckpt.metrics[name], ckpt.metric_steps[name] = value, steps[name]
    return checkpoints


def enrich(unit: Unit, run_id: int, source: Path, log: RunLog) -> None:
    """Ingest step: store the checkpoints found for a freshly stored run, and its lineage."""
    refs = list(log.checkpoints) + _logged(rows.load(unit, run_id))
    rows.save(unit, run_id, scan(source, log.config, refs, log.series))
    update_lineage(unit, run_id, source, log.config, log.events)


def _logged(stored: list[Checkpoint]) -> list[CheckpointRef]:
    """Checkpoints the logs named, with the figures the logs stated (not those of the series)."""
    return [CheckpointRef(c.step, c.path, {k: v for k, v in c.metrics.items()
                                           if k not in c.metric_steps})
            for c in stored if c.logged]


def rescan(store: Store, run_id: int) -> list[Checkpoint]:
    """Look at the disk again; a run whose folder is gone keeps what was stored."""
    with store.session() as s:
        run = Store._get(s, run_id)
        source, config = Path(run.source_path), dict(run.config)
        refs = _logged(rows.load(s, run_id))
    if not run_folder(source).is_dir():
        return store.checkpoints(run_id)
    found = scan(source, config, refs, _series(store, run_id))
    events = store.events(run_id, ["resume"])
    with store.session() as s:
        rows.save(s, run_id, found)
        update_lineage(s, run_id, source, config, events)
        return rows.load(s, run_id)


def _series(store: Store, run_id: int) -> dict[str, Series]:
    names = [n for n in store.series_infos(run_id) if n == "loss" or is_eval_metric(n)]
    return {name: store.series(run_id, name) for name in names}


def report(store: Store, run_id: int, metric: str | None = None, mode: str | None = None,
           from_best: bool = False) -> Report:
    """Best (by ``metric``/``mode``, else the framework's or eval loss), latest, resume point."""
    with store.session() as s:
        Store._get(s, run_id)
        found = rows.load(s, run_id)
        origin = lineage(s, run_id)
    choice = choose_metric(found, metric, mode, _stated(found))
    return Report(
        run_id, found, choice, best=best(found, choice.metric, choice.mode), latest=latest(found),
        resume=recommend(found, choice.metric, choice.mode, from_best=from_best), origin=origin,
    )


def _stated(found: list[Checkpoint]) -> tuple[str | None, str | None]:
    """The metric and mode the framework ranked by, from its newest checkpoint that says."""
    for ckpt in sorted(found, key=lambda c: c.step or 0, reverse=True):
        if ckpt.monitor:
            return ckpt.monitor, ckpt.monitor_mode
    return None, None


def plan_retention(
    store: Store, run_id: int, keep_best: int, keep_latest: int,
    metric: str | None = None, mode: str | None = None,
) -> tuple[Report, RetentionPlan]:
    """What keeping the best ``keep_best`` and the latest ``keep_latest`` would delete.

    Only plans: nothing is deleted here. The plan names each checkpoint by its
    real path, and keeps (only lists) every one that is not provably the run's
    (:mod:`tracker.checkpoints.ownership`).
    """
    answer = report(store, run_id, metric, mode)
    shown = [replace(c, path=shown_path(c.path)) for c in answer.checkpoints]
    with store.session() as s:
        source = Path(Store._get(s, run_id).source_path)
        resumed = rows.resumed_from(s)
        protected = claimed(s, run_id, [c.path for c in shown])
    protected.update({shown_path(path): f"run {', '.join(map(str, ids))} resumed from it"
                      for path, ids in resumed.items() if set(ids) - {run_id}})
    for ckpt in shown:
        why = refusal(ckpt, source)
        if why is not None:
            protected[ckpt.path] = why
    proposal = plan(shown, keep_best, keep_latest, answer.choice.metric, answer.choice.mode,
                    protected)
    return answer, proposal


def delete(store: Store, run_id: int, proposal: RetentionPlan, confirmed: bool) -> Deletion:
    """Move the plan's deletions to the system trash; refuses without ``confirmed``.

    Each path is checked again just before it goes: a folder swapped for a
    symlink since the plan was made is refused, not followed.
    """
    if not confirmed:
        raise PermissionError("deleting checkpoints needs an explicit confirmation")
    with store.session() as s:
        source = Path(Store._get(s, run_id).source_path)
        stored = {shown_path(c.path): c.path for c in rows.load(s, run_id)}
    done = Deletion()
    for ckpt in proposal.delete:
        error = _refused(ckpt, source) or (
            to_trash(Path(ckpt.path)) if os.path.lexists(ckpt.path) else None)
        if error:
            done.failed[ckpt.path] = error
        else:
            done.trashed.append(ckpt.path)
            done.freed_bytes += ckpt.size_bytes or 0
    with store.session() as s:
        rows.mark_deleted(s, run_id, [stored.get(p, p) for p in done.trashed])
    return done


def _refused(ckpt: Checkpoint, source: Path) -> str | None:
    """Why a planned deletion must not happen now, or None."""
    now = shown_path(ckpt.path)
    if now != ckpt.path:
        return f"now resolves to {now}: {OUTSIDE}"
    return refusal(ckpt, source)
