"""The team tracker: try and open its database, publish local runs to it, take runs offline.

The copy is idempotent because a run's ``content_key`` (hash of its source
content) is unique in every store: a run already in the target is skipped, and
two people publishing the same run at once cannot both insert it. Each run is
copied in one transaction, so a lost connection never leaves half a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from tracker.db.engine import SchemaError, make_engine, normalize_url, schema_state
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
from tracker.store import Store

# Tables hanging off a run, copied row by row with the new run id (files: with their part's).
_CHILDREN = (EventRow, CheckpointRow, RunTag, FindingRow)


class TeamError(RuntimeError):
    """The team database cannot be reached or used; the message says why in one line."""


def probe(url: str) -> str:
    """Try a database without changing it: what opening it would find, in words.

    Raises TeamError when the server cannot be reached or refuses the login, and
    SchemaError when a newer Headroom wrote the schema.
    """
    engine = make_engine(normalize_url(url))
    try:
        state = schema_state(engine)
        if state == "newer":
            raise SchemaError("the database schema is newer than this Headroom understands; "
                              "upgrade Headroom to open it")
        if state == "empty":
            return "Connected. The database is empty: Headroom creates its tables when you connect."
        with engine.connect() as conn:
            runs = conn.execute(select(func.count(Run.id))).scalar_one()
        upgraded = " (its tables are upgraded when you connect)" if state == "older" else ""
        return f"Connected. {runs:,} run{'s' * (runs != 1)} in the team database{upgraded}."
    except DBAPIError as err:
        raise TeamError(reason(err)) from None
    finally:
        engine.dispose()


def open_store(url: str) -> Store:
    """The team database, its tables created or upgraded; TeamError or SchemaError when not."""
    try:
        return Store(url)
    except DBAPIError as err:
        raise TeamError(reason(err)) from None


def reason(err: DBAPIError) -> str:
    """The driver's first line (``connection failed: … password authentication failed …``)."""
    text = str(err.orig).strip() if err.orig is not None else ""
    return text.splitlines()[0] if text else type(err).__name__


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
    parts = {}
    for part in src.execute(select(RunPart).where(RunPart.run_id == run.id)).scalars():
        values = _columns(part, skip={"id"}) | {"run_id": new_id}
        parts[part.id] = dst.execute(insert(RunPart).values(**values)).inserted_primary_key[0]
    for row in src.execute(select(SourceFile).where(SourceFile.run_id == run.id)).scalars():
        values = _columns(row, skip={"id"}) | {"run_id": new_id, "part_id": parts.get(row.part_id)}
        dst.execute(insert(SourceFile).values(**values))
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
