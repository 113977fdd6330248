"""Writing a reader's RunLog into the tables, and reading runs back as summaries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select

from core.palette import fallback
from core.shape import RunShape
from core.status import CheckpointStatus, RunStatus
from tracker.db.schema import (
    CheckpointRow,
    EventRow,
    Run,
    RunPart,
    RunTag,
    SeriesRow,
    SourceFile,
)
from tracker.db.unit import Unit
from tracker.model import RunSummary, SeriesInfo, SourceStat

if TYPE_CHECKING:  # listing runs (summaries) needs neither numpy nor the series codec
    from core.runlog import RunEvent, RunLog

# Fields the user corrected in the app win over what a re-read log says.
USER_SOURCE = "user"
# Events that end a run abnormally (an exit event is a failed or killed process).
CRASH_EVENTS = ("oom", "exception", "exit")
# Where the events a part of a job brought are marked: the run's own re-ingest keeps them.
PART_KEY = "part"



def save(
    unit: Unit,
    log: RunLog,
    source_key: str,
    content_key: str,
    sources: list[SourceStat],
    existing: Run | None,
    user: str = "",
    host: str = "",
) -> tuple[int, int]:
    """Store ``log`` as a new run or into ``existing``; returns (run id, points written)."""
    now = datetime.now(UTC)
    if existing is None:
        run = Run(
            source_key=source_key, content_key=content_key, name=log.name, format=log.format,
            source_path=source_key.split("#", 1)[0], started_at=_aware(log.started), ingested_at=now,
            updated_at=now, status=_status(log), user=user, host=host,
            shape=log.shape.to_dict(), config=log.config, summary=jsonable(log.summary),
            colour=new_colour(unit),
        )
        unit.session.add(run)
        unit.session.flush()
    else:
        run = existing
        run.content_key = content_key
        run.format = log.format
        run.updated_at = now
        run.started_at = run.started_at or _aware(log.started)
        run.status = _status(log)
        run.shape = _merged_shape(RunShape.from_dict(run.shape), log.shape).to_dict()
        run.config = log.config
        run.summary = jsonable(log.summary)
    fresh = existing is None  # created just now: nothing stored under it to keep or replace
    skip = frozenset() if fresh else part_metrics(unit, run.id)
    points = save_series(unit, run.id, log, skip=skip, fresh=fresh)
    if points or fresh:  # a new log, even a header alone, is a sign of life
        run.last_data_at = _last_written(sources) or now
    save_events(unit, run.id, log.events, fresh=fresh)
    save_checkpoint_refs(unit, run.id, log, fresh=fresh)
    save_sources(unit, run.id, sources, fresh=fresh)
    return run.id, points


def new_colour(unit: Unit) -> str:
    """The colour for a run about to be stored: the palette's least used."""
    from sqlalchemy import func

    from core.palette import next_colour

    counts = unit.session.execute(select(Run.colour, func.count()).group_by(Run.colour)).all()
    return next_colour({colour: n for colour, n in counts if colour})


def by_source(unit: Unit, source_key: str) -> Run | None:
    """The run ingested from ``source_key`` (a path, plus "#key" for a file of several runs)."""
    return unit.session.execute(select(Run).where(Run.source_key == source_key)).scalar_one_or_none()


def name_of(unit: Unit, run_id: int) -> str:
    return unit.session.execute(select(Run.name).where(Run.id == run_id)).scalar_one()


def source_path(unit: Unit, run_id: int) -> str:
    return unit.session.execute(select(Run.source_path).where(Run.id == run_id)).scalar_one()


def refresh_stats(unit: Unit, run_id: int, sources: list[SourceStat]) -> None:
    """Refresh size/mtime of unchanged sources so the next ingest skips them without hashing."""
    for s in sources:
        row = unit.session.execute(
            select(SourceFile).where(SourceFile.run_id == run_id, SourceFile.path == s.path)
        ).scalar_one_or_none()
        if row is not None:
            row.size, row.mtime = s.size, s.mtime


def _aware(when: datetime | None) -> datetime | None:
    """Logs write local times without a zone; the store keeps UTC."""
    if when is None or when.tzinfo is not None:
        return when
    return when.astimezone(UTC)


def _status(log: RunLog) -> str:
    """Crash evidence first, then what the log states, else a summary means it ended."""
    if any(e.kind in CRASH_EVENTS for e in log.events):
        return RunStatus.CRASHED
    return log.status or (RunStatus.FINISHED if log.summary else RunStatus.UNKNOWN)


def _utc(when: datetime | None) -> datetime | None:
    """A stored UTC time as an aware one (the columns keep no zone)."""
    return when if when is None or when.tzinfo is not None else when.replace(tzinfo=UTC)


def _last_written(sources: list[SourceStat]) -> datetime | None:
    """When the newest source file was written: new points are that old, not ingest-time new."""
    if not sources:
        return None
    return datetime.fromtimestamp(max(s.mtime for s in sources), UTC)


def _merged_shape(stored: RunShape, read: RunShape) -> RunShape:
    """The newly read shape, with the user's own corrections kept and what it no longer
    says (or never said: a GPU sampler that joined the run) filled from the stored one."""
    for name, source in stored.sources.items():
        if source == USER_SOURCE:
            read.set(name, getattr(stored, name), USER_SOURCE)
    read.merge(stored)
    return read


def jsonable(values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in values.items():
        if isinstance(value, float) and value != value:  # NaN has no JSON form
            value = None
        out[key] = value
    return out


def part_metrics(unit: Unit, run_id: int) -> set[str]:
    """Series of the run that parts of its job brought (its own log leaves them alone)."""
    names = unit.session.execute(select(RunPart.metrics).where(RunPart.run_id == run_id)).scalars()
    return {name for listed in names for name in listed}


def save_series(unit: Unit, run_id: int, log: RunLog, skip: set[str] = frozenset(),
                fresh: bool = False) -> int:
    """Store the log's series into the run (new points appended); returns the points written.
    ``fresh``: the run was created in this transaction, so it has no series to look up."""
    from tracker.db import series as series_store

    stored = {} if fresh else {
        row.name: row
        for row in unit.session.execute(select(SeriesRow).where(SeriesRow.run_id == run_id)).scalars()
    }
    points, new = 0, []
    for name, series in log.series.items():
        row = stored.get(name)
        if name in skip:
            continue
        if row is None:
            new.append(series)
        elif series_store.extends(row, series):
            points += series_store.append(unit, row, series)
        else:
            series_store.replace(unit, row, series)
            points += len(series)
    return points + series_store.write_all(unit, run_id, new)


def save_events(unit: Unit, run_id: int, events: list[RunEvent],
                part_key: str | None = None, fresh: bool = False) -> None:
    """Store the events of the run's own log (or of one part), keeping the others'
    (``fresh``: a run created in this transaction has none)."""
    seen: set[tuple[str, int | None]] = set()
    if not fresh:
        for row in unit.session.execute(select(EventRow).where(EventRow.run_id == run_id)).scalars():
            if row.data.get(PART_KEY) == part_key:
                unit.session.delete(row)
        unit.session.flush()
        seen = {(e.kind, e.step) for e in unit.session.execute(
            select(EventRow).where(EventRow.run_id == run_id)).scalars()}
    for e in events:
        if part_key is not None and (e.kind, e.step) in seen:
            continue  # the run's own log says so already
        data = jsonable(e.data) | ({PART_KEY: part_key} if part_key else {})
        unit.session.add(EventRow(run_id=run_id, kind=e.kind, step=e.step, message=e.message,
                             wall_time=e.wall_time, data=data))


def save_checkpoint_refs(unit: Unit, run_id: int, log: RunLog, fresh: bool = False) -> None:
    known = set() if fresh else set(
        unit.session.execute(select(CheckpointRow.path).where(CheckpointRow.run_id == run_id)).scalars()
    )
    for ref in log.checkpoints:
        if ref.path not in known:
            known.add(ref.path)
            unit.session.add(
                CheckpointRow(run_id=run_id, step=ref.step, path=ref.path, status=CheckpointStatus.LOGGED,
                              metrics=jsonable(ref.metrics))
            )


def save_sources(unit: Unit, run_id: int, sources: list[SourceStat],
                 part_id: int | None = None, fresh: bool = False) -> None:
    """Replace the stored files of the run's own log (``part_id`` None) or of one part."""
    known: set[str] = set()
    if not fresh:
        mine = SourceFile.part_id.is_(None) if part_id is None else SourceFile.part_id == part_id
        unit.session.execute(delete(SourceFile).where(SourceFile.run_id == run_id, mine))
        unit.session.flush()
        known = set(unit.session.execute(select(SourceFile.path).where(SourceFile.run_id == run_id))
                    .scalars())
    for s in sources:
        if s.path not in known:
            known.add(s.path)
            unit.session.add(SourceFile(run_id=run_id, part_id=part_id, path=s.path, size=s.size,
                                   mtime=s.mtime, sha256=s.sha256))


_SERIES_COLUMNS = (
    SeriesRow.run_id, SeriesRow.id, SeriesRow.name, SeriesRow.original_name, SeriesRow.count,
    SeriesRow.first_step, SeriesRow.last_step, SeriesRow.min, SeriesRow.max, SeriesRow.last,
    SeriesRow.first_nonfinite_step,
)
_RUN_COLUMNS = (
    Run.id, Run.name, Run.format, Run.source_path, Run.started_at, Run.ingested_at, Run.status,
    Run.notes, Run.shape, Run.last_data_at, Run.colour, Run.config["plan"].label("plan"),
)


def summaries(unit: Unit, run_ids: list[int] | None = None,
              severities: Mapping[int, str] | None = None) -> list[RunSummary]:
    """Runs with their tags and series summaries, newest first, in three plain queries.

    Columns are selected as tuples, not ORM objects: the runs table of a team
    database lists thousands of runs and tens of thousands of series.
    ``severities`` gives each run's worst finding (the diagnostics own that table).
    """
    severities = severities or {}
    runs = unit.session.execute(_only(select(*_RUN_COLUMNS), Run.id, run_ids).order_by(Run.id.desc())).all()
    tags: dict[int, list[str]] = defaultdict(list)
    for run_id, tag in unit.session.execute(
        _only(select(RunTag.run_id, RunTag.tag), RunTag.run_id, run_ids).order_by(RunTag.tag)
    ):
        tags[run_id].append(tag)
    infos: dict[int, dict[str, SeriesInfo]] = defaultdict(dict)
    for row in unit.session.execute(_only(select(*_SERIES_COLUMNS), SeriesRow.run_id, run_ids)):
        series_id, name, original, *stats = row[1:]
        infos[row[0]][row[2]] = SeriesInfo(*stats, id=series_id, name=name,
                                           original_name=original)
    return [
        RunSummary(
            id=r.id, name=r.name, format=r.format, source_path=r.source_path,
            started_at=r.started_at, ingested_at=r.ingested_at, status=r.status, notes=r.notes,
            shape=RunShape.from_dict(r.shape), tags=tags[r.id], series=infos[r.id],
            severity=severities.get(r.id), last_data_at=_utc(r.last_data_at),
            colour=r.colour or fallback(r.id),
            plan=r.plan if isinstance(r.plan, dict) else None,
        )
        for r in runs
    ]


def _only(query, column, ids: list[int] | None):
    return query if ids is None else query.where(column.in_(ids))


def excluded_from_fit(unit: Unit) -> set[int]:
    """Runs the user keeps out of the memory model's calibration."""
    return set(unit.session.execute(select(Run.id).where(Run.exclude_from_fit.is_(True))).scalars())


def get(unit: Unit, run_id: int) -> Run | None:
    return unit.session.get(Run, run_id)


def events(unit: Unit, run_id: int, kinds: Iterable[str] | None = None) -> list[RunEvent]:
    """A run's stored events (of ``kinds``, or all), in the order they were logged."""
    from core.runlog import RunEvent

    query = select(EventRow).where(EventRow.run_id == run_id).order_by(EventRow.id)
    if kinds is not None:
        query = query.where(EventRow.kind.in_(list(kinds)))
    rows = unit.session.execute(query).scalars()
    return [RunEvent(r.kind, r.step, r.message, dict(r.data), r.wall_time) for r in rows]


def count(unit: Unit) -> int:
    from sqlalchemy import func

    return unit.session.execute(select(func.count(Run.id))).scalar_one()


def ids(unit: Unit) -> list[int]:
    """Every stored run's id, oldest first."""
    return list(unit.session.execute(select(Run.id).order_by(Run.id)).scalars())


def ids_named(unit: Unit, name: str) -> list[int]:
    """The runs named exactly ``name`` (no pattern: ``%`` and ``_`` are plain characters)."""
    return list(unit.session.execute(select(Run.id).where(Run.name == name)).scalars())


def names_containing(unit: Unit, text: str, limit: int) -> list[tuple[int, str]]:
    """(id, name) of the first runs whose name contains ``text``, as suggestions."""
    query = (select(Run.id, Run.name).where(Run.name.contains(text, autoescape=True))
             .order_by(Run.id).limit(limit))
    return [(run_id, name) for run_id, name in unit.session.execute(query)]


def update(unit: Unit, run_id: int, **values: Any) -> bool:
    """Set the run's stored fields (name, notes, colour...); False when there is no such run."""
    run = get(unit, run_id)
    if run is None:
        return False
    for key, value in values.items():
        setattr(run, key, value)
    return True


def set_tags(unit: Unit, run_id: int, tags: Iterable[str]) -> None:
    """Replace the run's tags."""
    unit.session.execute(delete(RunTag).where(RunTag.run_id == run_id))
    unit.session.add_all(RunTag(run_id=run_id, tag=t) for t in tags)


def sources(unit: Unit, run_id: int) -> list[SourceStat]:
    """The files a run was read from, by path, as they were when last read."""
    rows = unit.session.execute(
        select(SourceFile).where(SourceFile.run_id == run_id).order_by(SourceFile.path)).scalars()
    return [SourceStat(r.path, r.size, r.mtime, r.sha256) for r in rows]


def remove(unit: Unit, run_ids: Iterable[int]) -> int:
    """Delete runs and every row hanging off them; returns how many runs went."""
    return unit.session.execute(delete(Run).where(Run.id.in_(list(run_ids)))).rowcount


def loss_ending_between(unit: Unit, run_id: int, low: float,
                        high: float) -> list[tuple[int, str, dict]]:
    """(run, source path, shape) of other runs whose loss ends in [low, high), latest first."""
    rows = unit.session.execute(
        select(SeriesRow.run_id, Run.source_path, Run.shape).join(Run, Run.id == SeriesRow.run_id)
        .where(SeriesRow.name == "loss", SeriesRow.run_id != run_id,
               SeriesRow.last_step < high, SeriesRow.last_step >= low)
        .order_by(SeriesRow.last_step.desc())
    ).all()
    return [(r.run_id, r.source_path, r.shape) for r in rows]


def shapes_except(unit: Unit, run_id: int) -> list[tuple[int, dict, str]]:
    """(run, stored shape, name) of every other run."""
    return [tuple(r) for r in
            unit.session.execute(select(Run.id, Run.shape, Run.name).where(Run.id != run_id)).all()]
