"""Runs that are one job, in the tables: the parts that joined a run, merging, splitting.

A part is a log that became part of another run (a second logger, a GPU sampler):
its series and files belong to the run, and the ``run_part`` row keeps the keys
ingest knows the log by, so a grown log updates its part and the user can split
it off again. Which logs belong together is decided elsewhere (``core.jobs``,
``tracker.jobs``); this module only moves rows, inside the caller's transaction.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, or_, select, update

from core.shape import RunShape
from core.status import RunStatus
from tracker.db.runs import CRASH_EVENTS, PART_KEY
from tracker.db.schema import (
    CheckpointRow,
    EventRow,
    FindingRow,
    Run,
    RunPart,
    RunTag,
    SeriesRow,
    SourceFile,
)
from tracker.db.unit import Unit

if TYPE_CHECKING:
    from core.runlog import Series

LOGGER, SYSTEM = "logger", "system"
# Of one metric in both runs, the copy to keep: "mine" (the run's), "theirs", None (both).
Keep = Callable[["Series", "Series"], "str | None"]


# ---- Looking up


def part_by_source(unit: Unit, source_key: str) -> RunPart | None:
    return unit.session.execute(
        select(RunPart).where(RunPart.source_key == source_key)).scalar_one_or_none()


def part(unit: Unit, part_id: int) -> RunPart | None:
    return unit.session.get(RunPart, part_id)


def record_read(unit: Unit, part: RunPart, metrics: list[str], content_key: str) -> None:
    """A part's log was read again: the series it now brings and its content's hash."""
    part.metrics, part.content_key = metrics, content_key


def parts(unit: Unit, run_id: int) -> list[RunPart]:
    return list(unit.session.execute(
        select(RunPart).where(RunPart.run_id == run_id).order_by(RunPart.id)).scalars())


def content_owner(unit: Unit, content_key: str) -> tuple[int, str] | None:
    """The run holding this content, as its own source or as a part: (run id, source path)."""
    for table in (Run, RunPart):
        run_column = Run.id if table is Run else RunPart.run_id
        found = unit.session.execute(select(run_column, table.source_path)
                                .where(table.content_key == content_key)).first()
        if found is not None:
            return found[0], found[1]
    return None


def source_rows(unit: Unit, key: str) -> list[SourceFile]:
    """The stored files of whatever was ingested from ``key`` (a run of its own or a part)."""
    own = or_(Run.source_key == key, Run.source_key.startswith(key + "#"))
    joined = or_(RunPart.source_key == key, RunPart.source_key.startswith(key + "#"))
    rows = list(unit.session.execute(select(SourceFile).join(Run, Run.id == SourceFile.run_id)
                                .where(own, SourceFile.part_id.is_(None))).scalars())
    rows += unit.session.execute(select(SourceFile).join(RunPart, RunPart.id == SourceFile.part_id)
                            .where(joined)).scalars()
    return rows


def part_files(unit: Unit, part_id: int) -> list[str]:
    return list(unit.session.execute(select(SourceFile.path).where(SourceFile.part_id == part_id)
                                .order_by(SourceFile.path)).scalars())


def file_paths(unit: Unit, run_id: int) -> list[str]:
    """Every file the run was read from, its parts' included."""
    return files_by_run(unit, [run_id]).get(run_id, [])


def files_by_run(unit: Unit, run_ids: Iterable[int]) -> dict[int, list[str]]:
    """:func:`file_paths` of many runs in one query (runs without files are absent)."""
    out: dict[int, list[str]] = {}
    for run_id, path in unit.session.execute(
            select(SourceFile.run_id, SourceFile.path).where(SourceFile.run_id.in_(list(run_ids)))):
        out.setdefault(run_id, []).append(path)
    return out


def loss_matches(unit: Unit, run_id: int) -> list[int]:
    """Other runs whose loss series has this run's length, first and last step."""
    mine = unit.session.execute(select(SeriesRow).where(
        SeriesRow.run_id == run_id, SeriesRow.name == "loss")).scalar_one_or_none()
    if mine is None:
        return []
    return list(unit.session.execute(
        select(SeriesRow.run_id).join(Run, Run.id == SeriesRow.run_id).where(
            SeriesRow.name == "loss", SeriesRow.count == mine.count,
            SeriesRow.first_step == mine.first_step, SeriesRow.last_step == mine.last_step,
            SeriesRow.run_id != run_id, Run.kept_apart.is_(False),
        ).order_by(SeriesRow.run_id)).scalars())


def runs_under(unit: Unit, folder: str, formats: Iterable[str] | None = None,
               exclude: Iterable[str] = ()) -> list[Run]:
    """Runs whose source lies in ``folder`` (at any depth), optionally of some formats only."""
    query = select(Run).where(or_(Run.source_path == folder,
                                  Run.source_path.startswith(folder.rstrip(os.sep) + os.sep,
                                                             autoescape=True)))
    if formats is not None:
        query = query.where(Run.format.in_(list(formats)))
    excluded = list(exclude)
    if excluded:
        query = query.where(Run.format.not_in(excluded))
    return list(unit.session.execute(query.order_by(Run.id)).scalars())


def runs_started_between(unit: Unit, start: datetime, end: datetime,
                         exclude: Iterable[str] = ()) -> list[Run]:
    """Runs that started before ``end`` and last wrote after ``start``."""
    return list(unit.session.execute(select(Run).where(
        Run.started_at <= end, or_(Run.last_data_at.is_(None), Run.last_data_at >= start),
        Run.format.not_in(list(exclude)), Run.kept_apart.is_(False)).order_by(Run.id)).scalars())


# ---- Series


def series_names(unit: Unit, run_id: int) -> set[str]:
    return set(unit.session.execute(select(SeriesRow.name).where(SeriesRow.run_id == run_id))
               .scalars())


def step_range(unit: Unit, run_id: int, exclude: Iterable[str] = ()) -> tuple[int, int] | None:
    """The first and last step of the run's loss (else of any of its series but ``exclude``)."""
    rows = unit.session.execute(select(SeriesRow.name, SeriesRow.first_step, SeriesRow.last_step)
                           .where(SeriesRow.run_id == run_id)).all()
    rows = [r for r in rows if r.name not in set(exclude) and r.first_step is not None]
    loss = [r for r in rows if r.name == "loss"]
    chosen = loss or rows
    if not chosen:
        return None
    return min(r.first_step for r in chosen), max(r.last_step for r in chosen)


def read_series(unit: Unit, run_id: int, names: Iterable[str] | None = None
                ) -> dict[str, Series]:
    from core.runlog import Series
    from tracker.db import series as series_store

    query = select(SeriesRow).where(SeriesRow.run_id == run_id)
    if names is not None:
        query = query.where(SeriesRow.name.in_(list(names)))
    out = {}
    for row in unit.session.execute(query).scalars():
        steps, values, walls = series_store.read(unit, row.id)
        out[row.name] = Series(row.name, steps, values, row.original_name, walls)
    return out


def timed_series(unit: Unit, run_id: int, exclude: Iterable[str] = ()) -> dict[str, Series]:
    """The series a run's clock can come from: those with wall times, and elapsed seconds."""
    names = unit.session.execute(select(SeriesRow.name).where(
        SeriesRow.run_id == run_id,
        or_(SeriesRow.has_wall_time.is_(True), SeriesRow.name == "elapsed_s"))).scalars()
    return read_series(unit, run_id, [n for n in names if n not in set(exclude)])


# ---- Merging and splitting


def merge(unit: Unit, into: int, other: int, role: str, keep: Keep,
          placed: dict[str, Series] | None = None, note: str = "") -> RunPart:
    """Make run ``other`` a part of run ``into``; ``other`` is deleted.

    Its series move over, except copies of the run's own (``keep`` says which copy of
    a metric both hold to keep: the run's, listed as the part's ``duplicates``, or
    the part's); a different series of a name the run has is kept as ``name@format``.
    ``placed`` replaces its series (a sampler's samples placed on the run's steps).
    Files, events, checkpoints and tags follow; its findings go (the caller diagnoses
    the job again).
    """
    target, source = _get(unit, into), _get(unit, other)
    part = RunPart(run_id=into, source_key=source.source_key, content_key=source.content_key,
                   source_path=source.source_path, name=source.name, format=source.format,
                   role=role, note=note, ingested_at=source.ingested_at)
    unit.session.add(part)
    unit.session.flush()
    part.metrics, part.duplicates = _take_series(unit, target, source, keep, placed)
    _take_files(unit, into, other, part.id)
    unit.session.execute(update(RunPart).where(RunPart.run_id == other).values(run_id=into))
    _take_events(unit, into, other, source.source_key)
    _take_checkpoints(unit, into, other)
    _take_run_fields(unit, target, source)
    unit.session.delete(source)
    unit.session.flush()
    return part


def _take_series(unit: Unit, target: Run, source: Run, keep: Keep,
                 placed: dict[str, Series] | None) -> tuple[list[str], list[str]]:
    from tracker.db import series as series_store

    names = set(unit.session.execute(select(SeriesRow.name).where(SeriesRow.run_id == target.id))
                .scalars())
    theirs = {r.name: r for r in unit.session.execute(
        select(SeriesRow).where(SeriesRow.run_id == source.id)).scalars()}
    taken, duplicates = [], []
    if placed is not None:
        for row in theirs.values():
            unit.session.delete(row)
        unit.session.flush()
        for name, series in placed.items():
            series.name = name if name not in names else f"{name}@{source.format}"
            series_store.write(unit, target.id, series)
            taken.append(series.name)
        return taken, duplicates
    shared = [n for n in theirs if n in names]
    mine, other = read_series(unit, target.id, shared), read_series(unit, source.id, shared)
    for name, row in theirs.items():
        kept = keep(mine[name], other[name]) if name in names else None
        if kept == "mine":
            unit.session.delete(row)
            duplicates.append(name)
            continue
        if kept == "theirs":  # more points, or wall times (TensorBoard's beside a CSV's)
            unit.session.execute(delete(SeriesRow).where(SeriesRow.run_id == target.id,
                                                    SeriesRow.name == name))
            names.discard(name)
        row.run_id = target.id
        row.name = name if name not in names else f"{name}@{source.format}"
        taken.append(row.name)
    unit.session.flush()
    return taken, duplicates


def _take_files(unit: Unit, into: int, other: int, part_id: int) -> None:
    known = set(file_paths(unit, into))
    for row in unit.session.execute(select(SourceFile).where(SourceFile.run_id == other)).scalars():
        if row.path in known:
            unit.session.delete(row)
            continue
        row.run_id = into
        row.part_id = row.part_id or part_id
    unit.session.flush()


def _take_events(unit: Unit, into: int, other: int, key: str) -> None:
    seen = {(e.kind, e.step) for e in unit.session.execute(
        select(EventRow).where(EventRow.run_id == into)).scalars()}
    for row in unit.session.execute(select(EventRow).where(EventRow.run_id == other)).scalars():
        if (row.kind, row.step) in seen:
            continue
        row.run_id = into
        row.data = {**row.data, PART_KEY: row.data.get(PART_KEY, key)}


def _take_checkpoints(unit: Unit, into: int, other: int) -> None:
    known = set(unit.session.execute(
        select(CheckpointRow.path).where(CheckpointRow.run_id == into)).scalars())
    for row in unit.session.execute(
            select(CheckpointRow).where(CheckpointRow.run_id == other)).scalars():
        if row.path not in known:
            row.run_id = into
    unit.session.execute(delete(FindingRow).where(FindingRow.run_id == other))
    unit.session.flush()


def _take_run_fields(unit: Unit, target: Run, source: Run) -> None:
    shape = RunShape.from_dict(target.shape)
    shape.merge(RunShape.from_dict(source.shape))
    target.shape = shape.to_dict()
    target.summary = {**source.summary, **target.summary}
    target.config = {**source.config, **target.config}
    if source.status == RunStatus.CRASHED or any(
            e.kind in CRASH_EVENTS for e in unit.session.execute(
                select(EventRow).where(EventRow.run_id == target.id)).scalars()):
        target.status = RunStatus.CRASHED
    target.started_at = min(filter(None, (target.started_at, source.started_at)), default=None)
    target.last_data_at = max(filter(None, (target.last_data_at, source.last_data_at)),
                              default=None)
    target.updated_at = datetime.now(UTC)
    tags = set(unit.session.execute(select(RunTag.tag).where(RunTag.run_id == target.id)).scalars())
    for tag in unit.session.execute(select(RunTag.tag).where(RunTag.run_id == source.id)).scalars():
        if tag not in tags:
            unit.session.add(RunTag(run_id=target.id, tag=tag))
    if source.notes and source.notes not in target.notes:
        target.notes = "\n\n".join(filter(None, (target.notes, source.notes)))


def split(unit: Unit, part_id: int, colour: str | None = None) -> int:
    """Make a part a run of its own again (kept apart from now on); returns its id.

    Its series and files move to the new run; the series it held identical to the
    job's are copied, so it keeps every curve it brought.
    """
    from tracker.db import series as series_store

    part = unit.session.get(RunPart, part_id)
    if part is None:
        raise LookupError(f"no part {part_id}")
    now = datetime.now(UTC)
    run = Run(source_key=part.source_key, content_key=part.content_key, name=part.name,
              format=part.format, source_path=part.source_path, ingested_at=part.ingested_at,
              updated_at=now, kept_apart=True, colour=colour, shape={}, config={}, summary={})
    unit.session.add(run)
    unit.session.flush()
    unit.session.execute(update(SeriesRow).where(SeriesRow.run_id == part.run_id,
                                            SeriesRow.name.in_(part.metrics))
                    .values(run_id=run.id))
    for series in read_series(unit, part.run_id, part.duplicates).values():
        series_store.write(unit, run.id, series)
    unit.session.execute(update(SourceFile).where(SourceFile.part_id == part.id)
                    .values(run_id=run.id, part_id=None))
    for row in unit.session.execute(select(EventRow).where(EventRow.run_id == part.run_id)).scalars():
        if row.data.get(PART_KEY) == part.source_key:
            row.run_id = run.id
            row.data = {k: v for k, v in row.data.items() if k != PART_KEY}
    unit.session.flush()
    unit.session.delete(part)
    unit.session.flush()
    return run.id


def _get(unit: Unit, run_id: int) -> Run:
    run = unit.session.get(Run, run_id)
    if run is None:
        raise LookupError(f"no run with id {run_id}")
    return run
