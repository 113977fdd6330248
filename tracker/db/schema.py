"""The tables: one per concept, indexed on what queries filter by.

Metric series are stored as binary chunks of numpy arrays (``series_chunk``),
with their summary statistics in ``series`` so the runs table never reads a
point. Schema changes go through Alembic revisions in ``migrations/``.

The rows are SQLAlchemy's typed dataclass mappings: a constructor with the
columns' defaults, types checked from the annotations, and nothing else to
import (SQLModel's pydantic layer cost every command about 0.2 s of start-up
and nothing here validates through it). The annotations are not postponed (no
``from __future__ import annotations``): the mapping would eval each one from a
string, 8 ms of every command that opens the database.
"""

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedAsDataclass, mapped_column


class UTCTime(TypeDecorator[datetime]):
    """A moment in UTC: aware times go in (a naive one is a bug, refused), aware times come
    out, also from SQLite, which keeps no zone."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"a time without a zone cannot be stored: {value}")
        return None if value is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.utcoffset() is None else value.astimezone(UTC)


class Table(MappedAsDataclass, DeclarativeBase, kw_only=True, eq=False):
    """Base of every row: keyword constructor with defaults; rows compare by identity, as the
    session's identity map expects."""

    # The column types the first revision was written with (SQLAlchemy's own map would make
    # floats DOUBLE and times naive, a schema change).
    type_annotation_map = {float: Float, datetime: UTCTime}


def _fk(table: str) -> Any:
    return mapped_column(Integer, ForeignKey(f"{table}.id", ondelete="CASCADE"), index=True)


def _json() -> Any:
    return mapped_column(JSON, default_factory=dict)


def _id() -> Any:
    return mapped_column(primary_key=True, init=False)


class Run(Table):
    """One training run, as ingested from one log file or run folder."""

    __tablename__ = "run"

    id: Mapped[int] = _id()
    # Where the run came from (absolute path, plus "#key" when a file holds several runs).
    source_key: Mapped[str] = mapped_column(unique=True)
    # Hash of the source content as last stored, plus the same "#key": the database
    # refuses a second copy of the same content however it is raced.
    content_key: Mapped[str] = mapped_column(unique=True)
    name: Mapped[str] = mapped_column(index=True)
    format: Mapped[str] = mapped_column(index=True)
    source_path: Mapped[str]
    started_at: Mapped[datetime | None] = mapped_column(default=None, index=True)
    ingested_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    status: Mapped[str] = mapped_column(default="unknown", index=True)
    notes: Mapped[str] = mapped_column(default="")
    user: Mapped[str] = mapped_column(default="")
    host: Mapped[str] = mapped_column(default="")
    # When the run's logs last brought new points (live runs go stale, then "crashed?").
    last_data_at: Mapped[datetime | None] = mapped_column(default=None)
    # Path of the checkpoint this run resumed from, when known (lineage).
    resumed_from: Mapped[str | None] = mapped_column(default=None)
    # The user's choice to keep this run out of the memory-model calibration.
    exclude_from_fit: Mapped[bool] = mapped_column(default=False, index=True)
    # The run's colour in every view ("#rrggbb"): picked from the palette when it is stored,
    # or chosen by the user; None for runs stored before colours were kept.
    colour: Mapped[str | None] = mapped_column(default=None)
    # The user split this run off another one: ingest never merges it into a job again.
    kept_apart: Mapped[bool] = mapped_column(default=False)
    shape: Mapped[dict[str, Any]] = _json()
    config: Mapped[dict[str, Any]] = _json()
    summary: Mapped[dict[str, Any]] = _json()


class RunPart(Table):
    """A log that joined another run because it belongs to the same job.

    A second logger of the same training (its curves identical to the run's) or a
    GPU sampler that recorded the run's devices. The run keeps its own source;
    each part keeps the keys ingest knows it by, and the metrics it brought.
    """

    __tablename__ = "run_part"

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    source_key: Mapped[str] = mapped_column(unique=True)
    content_key: Mapped[str] = mapped_column(unique=True)
    source_path: Mapped[str]
    name: Mapped[str]  # the name the log would have had as a run of its own
    format: Mapped[str]
    role: Mapped[str]  # "logger": another log of the training; "system": device metrics
    # Series of the run this part brought, and those it also held identical to the run's.
    metrics: Mapped[list[str]] = mapped_column(JSON, default_factory=list)
    duplicates: Mapped[list[str]] = mapped_column(JSON, default_factory=list)
    # How a system part's samples were placed on the run's steps, in words.
    note: Mapped[str] = mapped_column(default="")
    ingested_at: Mapped[datetime]


class SourceFile(Table):
    """A file a run was read from, with what it looked like when it was read."""

    __tablename__ = "source_file"
    __table_args__ = (UniqueConstraint("run_id", "path"),)

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    # The part of the run the file belongs to (None: the run's own source).
    part_id: Mapped[int | None] = mapped_column(
        ForeignKey("run_part.id", ondelete="CASCADE"), index=True, default=None)
    path: Mapped[str] = mapped_column(index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime: Mapped[float]
    sha256: Mapped[str]


class SeriesRow(Table):
    """One metric of one run: summary statistics; the points live in chunks."""

    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    name: Mapped[str] = mapped_column(index=True)
    original_name: Mapped[str]
    count: Mapped[int]
    first_step: Mapped[int | None] = mapped_column(BigInteger, default=None)
    last_step: Mapped[int | None] = mapped_column(BigInteger, default=None)
    min: Mapped[float | None] = mapped_column(default=None)
    max: Mapped[float | None] = mapped_column(default=None)
    last: Mapped[float | None] = mapped_column(default=None)
    first_nonfinite_step: Mapped[int | None] = mapped_column(BigInteger, default=None)
    has_wall_time: Mapped[bool] = mapped_column(default=False)


class SeriesChunk(Table):
    """A slice of a series as little-endian int64 steps and float64 values."""

    __tablename__ = "series_chunk"

    series_id: Mapped[int] = mapped_column(
        ForeignKey("series.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(primary_key=True)
    n: Mapped[int]
    steps: Mapped[bytes] = mapped_column(LargeBinary)
    values: Mapped[bytes] = mapped_column(LargeBinary)
    wall_time: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)


class EventRow(Table):
    """Something that happened during a run: OOM, NaN, resume, exception."""

    __tablename__ = "event"
    __table_args__ = (Index("ix_event_run_kind", "run_id", "kind"),)

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    kind: Mapped[str]
    step: Mapped[int | None] = mapped_column(default=None)
    message: Mapped[str] = mapped_column(default="")
    wall_time: Mapped[float | None] = mapped_column(default=None)
    data: Mapped[dict[str, Any]] = _json()


class CheckpointRow(Table):
    """A checkpoint of a run: where it is, what it holds, the metrics at its step."""

    __tablename__ = "checkpoint"
    __table_args__ = (UniqueConstraint("run_id", "path"),)

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    step: Mapped[int | None] = mapped_column(default=None, index=True)
    path: Mapped[str]
    kind: Mapped[str] = mapped_column(default="unknown")
    status: Mapped[str] = mapped_column(default="unknown")
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    written_at: Mapped[datetime | None] = mapped_column(default=None)
    contents: Mapped[dict[str, Any]] = _json()
    metrics: Mapped[dict[str, Any]] = _json()
    note: Mapped[str] = mapped_column(default="")


class RunTag(Table):
    """A user's tag on a run."""

    __tablename__ = "run_tag"

    run_id: Mapped[int] = mapped_column(
        ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(primary_key=True, index=True)


class FindingRow(Table):
    """A diagnosis of a run: what went wrong, where, the evidence and the remedy."""

    __tablename__ = "finding"

    id: Mapped[int] = _id()
    run_id: Mapped[int] = _fk("run")
    kind: Mapped[str] = mapped_column(index=True)
    severity: Mapped[str] = mapped_column(index=True)
    step_start: Mapped[int | None] = mapped_column(BigInteger, default=None)
    step_end: Mapped[int | None] = mapped_column(BigInteger, default=None)
    message: Mapped[str]
    cause: Mapped[str] = mapped_column(default="")
    remedy: Mapped[str] = mapped_column(default="")
    evidence: Mapped[dict[str, Any]] = _json()


class ProjectRow(Table):
    """A planned project as its TOML text: the one truth the app edits and the CLI reads."""

    __tablename__ = "project"

    id: Mapped[int] = _id()
    name: Mapped[str] = mapped_column(unique=True)
    source: Mapped[str]  # the project's TOML
    # The folder of the file it was imported from: relative config.json paths are found there.
    base_dir: Mapped[str] = mapped_column(default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ProjectLinkRow(Table):
    """A stored run linked to a stage of a project: the stage's pilot, or its own run."""

    __tablename__ = "project_link"
    __table_args__ = (UniqueConstraint("project_id", "variant", "stage", "run_id"),)

    id: Mapped[int] = _id()
    project_id: Mapped[int] = _fk("project")
    variant: Mapped[str]
    stage: Mapped[str]
    run_id: Mapped[int] = _fk("run")
    role: Mapped[str]  # "pilot" or "run"
    # The pool card it ran on, when its shape does not name one (a CPU pilot, an old log).
    card: Mapped[str | None] = mapped_column(default=None)
    linked_at: Mapped[datetime]
