"""Checkpoint rows: writing a run's checkpoints and reading them back as core records.

What a checkpoint holds goes in the row's ``contents`` JSON; the user's note
survives every rescan, and a checkpoint a retention plan moved to the trash
stays listed as deleted, so lineage to it is never lost.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from sqlalchemy import select

from core.checkpoints import PARTS, Checkpoint
from core.status import CheckpointStatus
from tracker.db.schema import CheckpointRow, Run
from tracker.db.unit import Unit

# Checkpoint fields kept in the contents JSON, beside "has".
CONTENT_FIELDS = ("weights", "epoch", "keys", "warnings", "notes", "logged", "named_best",
                  "link_to", "monitor", "monitor_mode", "best_path", "metric_steps")


def save(unit: Unit, run_id: int, checkpoints: list[Checkpoint]) -> None:
    """Make the run's rows match ``checkpoints``, keeping notes and deleted checkpoints."""
    rows = {r.path: r for r in _rows(unit, run_id)}
    for ckpt in checkpoints:
        row = rows.pop(ckpt.path, None) or CheckpointRow(run_id=run_id, path=ckpt.path)
        _fill(row, ckpt)
        unit.session.add(row)
    for row in rows.values():
        if row.status != CheckpointStatus.DELETED:
            unit.session.delete(row)
    unit.session.flush()


def _fill(row: CheckpointRow, ckpt: Checkpoint) -> None:
    row.step, row.kind, row.status = ckpt.step, ckpt.kind, ckpt.status
    row.size_bytes, row.written_at = ckpt.size_bytes, ckpt.written_at
    row.metrics = {k: v for k, v in ckpt.metrics.items() if v == v}  # NaN has no JSON form
    row.contents = {"has": dict(ckpt.has), **{f: getattr(ckpt, f) for f in CONTENT_FIELDS}}


def load(unit: Unit, run_id: int) -> list[Checkpoint]:
    """The run's checkpoints, ordered by step (those without one last)."""
    return [to_checkpoint(r) for r in _rows(unit, run_id)]


def to_checkpoint(row: CheckpointRow) -> Checkpoint:
    contents = dict(row.contents or {})
    has = contents.pop("has", None) or {}
    ckpt = Checkpoint(
        path=row.path, step=row.step, kind=row.kind, status=row.status,
        has={part: has.get(part) for part in PARTS}, size_bytes=row.size_bytes,
        written_at=_utc(row.written_at),
        metrics=dict(row.metrics or {}),
    )
    for name in CONTENT_FIELDS:
        if contents.get(name) is not None:
            setattr(ckpt, name, contents[name])
    if row.status == CheckpointStatus.LOGGED:  # stored from a log before any scan looked for it
        ckpt.logged = True
    return ckpt


def _utc(when: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; they were stored as UTC."""
    return when.replace(tzinfo=UTC) if when and not when.tzinfo else when


def _rows(unit: Unit, run_id: int) -> list[CheckpointRow]:
    query = (select(CheckpointRow).where(CheckpointRow.run_id == run_id)
             .order_by(CheckpointRow.step.is_(None), CheckpointRow.step, CheckpointRow.path))
    return list(unit.session.execute(query).scalars())


def mark_deleted(unit: Unit, run_id: int, paths: list[str]) -> None:
    for row in _rows(unit, run_id):
        if row.path in paths:
            row.status = CheckpointStatus.DELETED


def resumed_from(unit: Unit) -> dict[str, list[int]]:
    """Checkpoint path -> the runs that resumed from it."""
    out: dict[str, list[int]] = defaultdict(list)
    for run_id, path in unit.session.execute(select(Run.id, Run.resumed_from).where(
            Run.resumed_from.is_not(None))):
        out[path].append(run_id)
    return dict(out)


def owners(unit: Unit, paths: list[str]) -> dict[str, tuple[int, int | None]]:
    """Checkpoint path -> (run id, step) for the stored checkpoints among ``paths``."""
    query = select(CheckpointRow.path, CheckpointRow.run_id, CheckpointRow.step).where(
        CheckpointRow.path.in_(paths))
    return {path: (run_id, step) for path, run_id, step in unit.session.execute(query)}


def paths_ending(unit: Unit, tail: str) -> list[str]:
    """Stored checkpoint paths that end with ``/tail`` (for paths from another machine)."""
    query = select(CheckpointRow.path).where(CheckpointRow.path.endswith("/" + tail))
    return sorted(set(unit.session.execute(query).scalars()))


def others_listing(unit: Unit, run_id: int) -> list[tuple[str, int]]:
    """(stored path, run id) of every live checkpoint other runs list."""
    query = select(CheckpointRow.path, CheckpointRow.run_id).where(
        CheckpointRow.run_id != run_id, CheckpointRow.status != CheckpointStatus.DELETED)
    return [(path, other) for path, other in unit.session.execute(query)]
