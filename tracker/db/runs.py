"""Writing a reader's RunLog into the tables, and reading runs back as summaries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.shape import RunShape
from tracker.db.schema import CheckpointRow, EventRow, Run, RunTag, SeriesRow, SourceFile
from tracker.model import SeriesInfo

if TYPE_CHECKING:  # listing runs (summaries) needs neither numpy nor the series codec
    from core.runlog import RunLog

# Fields the user corrected in the app win over what a re-read log says.
USER_SOURCE = "user"
# Events that end a run abnormally (an exit event is a failed or killed process).
CRASH_EVENTS = ("oom", "exception", "exit")


@dataclass(frozen=True)
class SourceStat:
    """A source file as it was when read: for change detection on the next ingest."""

    path: str
    size: int
    mtime: float
    sha256: str


@dataclass
class RunSummary:
    """One row of the runs table: the run and its series' summaries."""

    id: int
    name: str
    format: str
    source_path: str
    started_at: datetime | None
    ingested_at: datetime
    status: str
    notes: str
    shape: RunShape
    tags: list[str] = field(default_factory=list)
    series: dict[str, SeriesInfo] = field(default_factory=dict)
    severity: str | None = None  # the worst diagnostic finding's (None: no findings)
    last_data_at: datetime | None = None  # when the run's logs last brought new points
    plan: dict[str, Any] | None = None  # the exported plan it was launched from (hash, GiB)

    def stat(self, name: str, attr: str) -> Any:
        info = self.series.get(name)
        return None if info is None else getattr(info, attr)

    def plan_link(self) -> dict[str, Any] | None:
        """The plan it was launched from beside what it recorded: predicted vs peak GiB."""
        if not self.plan:
            return None
        return {"hash": self.plan.get("hash"), "device_gib": self.plan.get("device_gib"),
                "peak_allocated_gib": self.stat("mem_peak_gib", "max"),
                "peak_reserved_gib": self.stat("mem_reserved_gib", "max")}


def save(
    session: Session,
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
            shape=log.shape.to_dict(), config=log.config, summary=_jsonable(log.summary),
        )
        session.add(run)
        session.flush()
    else:
        run = existing
        run.content_key = content_key
        run.format = log.format
        run.updated_at = now
        run.started_at = run.started_at or _aware(log.started)
        run.status = _status(log)
        run.shape = _merged_shape(RunShape.from_dict(run.shape), log.shape).to_dict()
        run.config = log.config
        run.summary = _jsonable(log.summary)
    points = _save_series(session, run.id, log)
    if points or existing is None:  # a new log, even a header alone, is a sign of life
        run.last_data_at = _last_written(sources) or now
    _save_events(session, run.id, log)
    _save_checkpoint_refs(session, run.id, log)
    _save_sources(session, run.id, sources)
    return run.id, points


def _aware(when: datetime | None) -> datetime | None:
    """Logs write local times without a zone; the store keeps UTC."""
    if when is None or when.tzinfo is not None:
        return when
    return when.astimezone(UTC)


def _status(log: RunLog) -> str:
    """Crash evidence first, then what the log states, else a summary means it ended."""
    if any(e.kind in CRASH_EVENTS for e in log.events):
        return "crashed"
    return log.status or ("finished" if log.summary else "unknown")


def _utc(when: datetime | None) -> datetime | None:
    """A stored UTC time as an aware one (the columns keep no zone)."""
    return when if when is None or when.tzinfo is not None else when.replace(tzinfo=UTC)


def _last_written(sources: list[SourceStat]) -> datetime | None:
    """When the newest source file was written: new points are that old, not ingest-time new."""
    if not sources:
        return None
    return datetime.fromtimestamp(max(s.mtime for s in sources), UTC)


def _merged_shape(stored: RunShape, read: RunShape) -> RunShape:
    """The newly read shape, but with the user's own corrections kept."""
    for name, source in stored.sources.items():
        if source == USER_SOURCE:
            read.set(name, getattr(stored, name), USER_SOURCE)
    return read


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in values.items():
        if isinstance(value, float) and value != value:  # NaN has no JSON form
            value = None
        out[key] = value
    return out


def _save_series(session: Session, run_id: int, log: RunLog) -> int:
    from tracker.db import series as series_store

    stored = {
        row.name: row
        for row in session.execute(select(SeriesRow).where(SeriesRow.run_id == run_id)).scalars()
    }
    points = 0
    for name, series in log.series.items():
        row = stored.get(name)
        if row is None:
            series_store.write(session, run_id, series)
            points += len(series)
        elif series_store.extends(row, series):
            points += series_store.append(session, row, series)
        else:
            series_store.replace(session, row, series)
            points += len(series)
    return points


def _save_events(session: Session, run_id: int, log: RunLog) -> None:
    session.execute(delete(EventRow).where(EventRow.run_id == run_id))
    for e in log.events:
        session.add(
            EventRow(run_id=run_id, kind=e.kind, step=e.step, message=e.message,
                     wall_time=e.wall_time, data=_jsonable(e.data))
        )


def _save_checkpoint_refs(session: Session, run_id: int, log: RunLog) -> None:
    known = set(
        session.execute(select(CheckpointRow.path).where(CheckpointRow.run_id == run_id)).scalars()
    )
    for ref in log.checkpoints:
        if ref.path not in known:
            known.add(ref.path)
            session.add(
                CheckpointRow(run_id=run_id, step=ref.step, path=ref.path, status="logged",
                              metrics=_jsonable(ref.metrics))
            )


def _save_sources(session: Session, run_id: int, sources: list[SourceStat]) -> None:
    session.execute(delete(SourceFile).where(SourceFile.run_id == run_id))
    for s in sources:
        session.add(SourceFile(run_id=run_id, path=s.path, size=s.size, mtime=s.mtime, sha256=s.sha256))


_SERIES_COLUMNS = (
    SeriesRow.run_id, SeriesRow.id, SeriesRow.name, SeriesRow.original_name, SeriesRow.count,
    SeriesRow.first_step, SeriesRow.last_step, SeriesRow.min, SeriesRow.max, SeriesRow.last,
    SeriesRow.first_nonfinite_step,
)
_RUN_COLUMNS = (
    Run.id, Run.name, Run.format, Run.source_path, Run.started_at, Run.ingested_at, Run.status,
    Run.notes, Run.shape, Run.last_data_at, Run.config["plan"].label("plan"),
)


def summaries(session: Session, run_ids: list[int] | None = None,
              severities: Mapping[int, str] | None = None) -> list[RunSummary]:
    """Runs with their tags and series summaries, newest first, in three plain queries.

    Columns are selected as tuples, not ORM objects: the runs table of a team
    database lists thousands of runs and tens of thousands of series.
    ``severities`` gives each run's worst finding (the diagnostics own that table).
    """
    severities = severities or {}
    runs = session.execute(_only(select(*_RUN_COLUMNS), Run.id, run_ids).order_by(Run.id.desc())).all()
    tags: dict[int, list[str]] = defaultdict(list)
    for run_id, tag in session.execute(
        _only(select(RunTag.run_id, RunTag.tag), RunTag.run_id, run_ids).order_by(RunTag.tag)
    ):
        tags[run_id].append(tag)
    infos: dict[int, dict[str, SeriesInfo]] = defaultdict(dict)
    for row in session.execute(_only(select(*_SERIES_COLUMNS), SeriesRow.run_id, run_ids)):
        series_id, name, original, *stats = row[1:]
        infos[row[0]][row[2]] = SeriesInfo(*stats, id=series_id, name=name,
                                           original_name=original)
    return [
        RunSummary(
            id=r.id, name=r.name, format=r.format, source_path=r.source_path,
            started_at=r.started_at, ingested_at=r.ingested_at, status=r.status, notes=r.notes,
            shape=RunShape.from_dict(r.shape), tags=tags[r.id], series=infos[r.id],
            severity=severities.get(r.id), last_data_at=_utc(r.last_data_at),
            plan=r.plan if isinstance(r.plan, dict) else None,
        )
        for r in runs
    ]


def _only(query, column, ids: list[int] | None):
    return query if ids is None else query.where(column.in_(ids))
