"""SQLModel tables: one per concept, indexed on what queries filter by.

Metric series are stored as binary chunks of numpy arrays (``series_chunk``),
with their summary statistics in ``series`` so the runs table never reads a
point. Schema changes go through Alembic revisions in ``migrations/``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel


def _fk(table: str) -> Any:
    return Column(Integer, ForeignKey(f"{table}.id", ondelete="CASCADE"), nullable=False, index=True)


class Run(SQLModel, table=True):
    """One training run, as ingested from one log file or run folder."""

    __tablename__ = "run"

    id: int | None = Field(default=None, primary_key=True)
    # Where the run came from (absolute path, plus "#key" when a file holds several runs).
    source_key: str = Field(unique=True)
    # Hash of the source content as last stored, plus the same "#key": the database
    # refuses a second copy of the same content however it is raced.
    content_key: str = Field(unique=True)
    name: str = Field(index=True)
    format: str = Field(index=True)
    source_path: str
    started_at: datetime | None = Field(default=None, index=True)
    ingested_at: datetime
    updated_at: datetime
    status: str = Field(default="unknown", index=True)
    notes: str = ""
    user: str = ""
    host: str = ""
    # When the run's logs last brought new points (live runs go stale, then "crashed?").
    last_data_at: datetime | None = None
    # Path of the checkpoint this run resumed from, when known (lineage).
    resumed_from: str | None = None
    # The user's choice to keep this run out of the memory-model calibration.
    exclude_from_fit: bool = Field(default=False, index=True)
    shape: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    summary: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class SourceFile(SQLModel, table=True):
    """A file a run was read from, with what it looked like when it was read."""

    __tablename__ = "source_file"
    __table_args__ = (UniqueConstraint("run_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(sa_column=_fk("run"))
    path: str = Field(index=True)
    size: int = Field(sa_column=Column(BigInteger, nullable=False))
    mtime: float
    sha256: str


class SeriesRow(SQLModel, table=True):
    """One metric of one run: summary statistics; the points live in chunks."""

    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(sa_column=_fk("run"))
    name: str = Field(index=True)
    original_name: str
    count: int
    first_step: int | None = Field(default=None, sa_column=Column(BigInteger))
    last_step: int | None = Field(default=None, sa_column=Column(BigInteger))
    min: float | None = None
    max: float | None = None
    last: float | None = None
    first_nonfinite_step: int | None = Field(default=None, sa_column=Column(BigInteger))
    has_wall_time: bool = False


class SeriesChunk(SQLModel, table=True):
    """A slice of a series as little-endian int64 steps and float64 values."""

    __tablename__ = "series_chunk"

    series_id: int = Field(
        sa_column=Column(
            Integer, ForeignKey("series.id", ondelete="CASCADE"), primary_key=True
        )
    )
    seq: int = Field(primary_key=True)
    n: int
    steps: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    values: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    wall_time: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class EventRow(SQLModel, table=True):
    """Something that happened during a run: OOM, NaN, resume, exception."""

    __tablename__ = "event"
    __table_args__ = (Index("ix_event_run_kind", "run_id", "kind"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(sa_column=_fk("run"))
    kind: str
    step: int | None = None
    message: str = ""
    wall_time: float | None = None
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class CheckpointRow(SQLModel, table=True):
    """A checkpoint of a run: where it is, what it holds, the metrics at its step."""

    __tablename__ = "checkpoint"
    __table_args__ = (UniqueConstraint("run_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(sa_column=_fk("run"))
    step: int | None = Field(default=None, index=True)
    path: str
    kind: str = "unknown"
    status: str = "unknown"
    size_bytes: int | None = Field(default=None, sa_column=Column(BigInteger))
    written_at: datetime | None = None
    contents: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    metrics: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    note: str = ""


class RunTag(SQLModel, table=True):
    """A user's tag on a run."""

    __tablename__ = "run_tag"

    run_id: int = Field(
        sa_column=Column(Integer, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    )
    tag: str = Field(primary_key=True, index=True)


class FindingRow(SQLModel, table=True):
    """A diagnosis of a run: what went wrong, where, the evidence and the remedy."""

    __tablename__ = "finding"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(sa_column=_fk("run"))
    kind: str = Field(index=True)
    severity: str = Field(index=True)
    step_start: int | None = Field(default=None, sa_column=Column(BigInteger))
    step_end: int | None = Field(default=None, sa_column=Column(BigInteger))
    message: str
    cause: str = ""
    remedy: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class ProjectRow(SQLModel, table=True):
    """A planned project as its TOML text: the one truth the app edits and the CLI reads."""

    __tablename__ = "project"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    source: str  # the project's TOML
    # The folder of the file it was imported from: relative config.json paths are found there.
    base_dir: str = ""
    created_at: datetime
    updated_at: datetime


class ProjectLinkRow(SQLModel, table=True):
    """A stored run linked to a stage of a project: the stage's pilot, or its own run."""

    __tablename__ = "project_link"
    __table_args__ = (UniqueConstraint("project_id", "variant", "stage", "run_id"),)

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(sa_column=_fk("project"))
    variant: str
    stage: str
    run_id: int = Field(sa_column=_fk("run"))
    role: str  # "pilot" or "run"
    # The pool card it ran on, when its shape does not name one (a CPU pilot, an old log).
    card: str | None = None
    linked_at: datetime
