"""Copy runs between two stores: publish local runs to a team tracker, or take them offline.

The copy is idempotent because a run's ``content_key`` (hash of its source
content) is unique in every store: a run already in the target is skipped, and
two people publishing the same run at once cannot both insert it. Each run is
copied in one transaction, so a lost connection never leaves half a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tracker.db.schema import (
    CheckpointRow,
    EventRow,
    FindingRow,
    Run,
    RunTag,
    SeriesChunk,
    SeriesRow,
    SourceFile,
)
from tracker.store import Store

# Tables hanging off a run, copied row by row with the new run id.
_CHILDREN = (EventRow, CheckpointRow, RunTag, SourceFile, FindingRow)


@dataclass
class CopyReport:
    """Which runs were copied (source id → target id) and which the target already had."""

    copied: dict[int, int] = field(default_factory=dict)
    already_there: dict[int, int] = field(default_factory=dict)


def copy_runs(source: Store, target: Store, run_ids: list[int]) -> CopyReport:
    """Copy runs with their series, events, checkpoints, tags and findings."""
    report = CopyReport()
    for run_id in run_ids:
        with source.session() as src:
            run = src.get(Run, run_id)
            if run is None:
                continue
            existing = _find(target, run.content_key)
            if existing is not None:
                report.already_there[run_id] = existing
                continue
            try:
                with target.session() as dst:
                    report.copied[run_id] = _copy_run(src, dst, run)
            except IntegrityError:  # published concurrently by someone else
                report.already_there[run_id] = _find(target, run.content_key) or -1
    return report


def _find(store: Store, content_key: str) -> int | None:
    with store.session() as s:
        return s.execute(select(Run.id).where(Run.content_key == content_key)).scalar()


def _copy_run(src: Session, dst: Session, run: Run) -> int:
    new_id = dst.execute(insert(Run).values(**_columns(run, skip={"id"}))).inserted_primary_key[0]
    for table in _CHILDREN:
        rows = src.execute(select(table).where(table.run_id == run.id)).scalars().all()
        for row in rows:
            dst.execute(insert(table).values(**(_columns(row, skip={"id"}) | {"run_id": new_id})))
    for series in src.execute(select(SeriesRow).where(SeriesRow.run_id == run.id)).scalars():
        values = _columns(series, skip={"id"}) | {"run_id": new_id}
        series_id = dst.execute(insert(SeriesRow).values(**values)).inserted_primary_key[0]
        chunks = src.execute(select(SeriesChunk).where(SeriesChunk.series_id == series.id)).scalars()
        rows = [_columns(c) | {"series_id": series_id} for c in chunks]
        if rows:
            dst.execute(insert(SeriesChunk), rows)
    return new_id


def _columns(row, skip: set[str] = frozenset()) -> dict:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in skip}
