"""Copying a run, with every row hanging off it, from one database into another.

Rows are read in the source's unit of work and inserted in the target's with new
ids; a run's ``content_key`` (hash of its source content) is unique in every
database, so the target refuses a run it already holds (AlreadyStored).
"""

from __future__ import annotations

from sqlalchemy import insert, select

from tracker.db.schema import (
    CheckpointRow,
    EventRow,
    FindingRow,
    Run,
    RunPart,
    RunTag,
    SeriesChunk,
    SeriesRow,
    SourceFile,
)
from tracker.db.unit import Unit

# Tables hanging off a run, copied row by row with the new run id (files: with their part's).
_CHILDREN = (EventRow, CheckpointRow, RunTag, FindingRow)


def content_key(unit: Unit, run_id: int) -> str | None:
    """The hash of the run's source content; None when there is no such run."""
    return unit.session.execute(select(Run.content_key).where(Run.id == run_id)).scalar()


def holding(unit: Unit, key: str) -> int | None:
    """The run with this content key, if the database has one."""
    return unit.session.execute(select(Run.id).where(Run.content_key == key)).scalar()


def copy_run(src: Unit, dst: Unit, run_id: int) -> int:
    """Insert the source's run ``run_id`` and its parts, files, events, checkpoints, tags,
    findings and series into ``dst``; returns its id there."""
    run = src.session.get(Run, run_id)
    new_id = _insert(dst, Run, _columns(run, skip={"id"}))
    parts = {}
    for part in _of_run(src, RunPart, run_id):
        parts[part.id] = _insert(dst, RunPart, _columns(part, skip={"id"}) | {"run_id": new_id})
    for row in _of_run(src, SourceFile, run_id):
        values = _columns(row, skip={"id"}) | {"run_id": new_id, "part_id": parts.get(row.part_id)}
        dst.session.execute(insert(SourceFile).values(**values))
    for table in _CHILDREN:
        for row in _of_run(src, table, run_id):
            dst.session.execute(insert(table).values(**(_columns(row, skip={"id"})
                                                        | {"run_id": new_id})))
    for series in _of_run(src, SeriesRow, run_id):
        series_id = _insert(dst, SeriesRow, _columns(series, skip={"id"}) | {"run_id": new_id})
        chunks = src.session.execute(
            select(SeriesChunk).where(SeriesChunk.series_id == series.id)).scalars()
        rows = [_columns(c) | {"series_id": series_id} for c in chunks]
        if rows:
            dst.session.execute(insert(SeriesChunk), rows)
    return new_id


def _of_run(unit: Unit, table, run_id: int) -> list:
    return list(unit.session.execute(select(table).where(table.run_id == run_id)).scalars())


def _insert(unit: Unit, table, values: dict) -> int:
    return unit.session.execute(insert(table).values(**values)).inserted_primary_key[0]


def _columns(row, skip: set[str] = frozenset()) -> dict:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in skip}
