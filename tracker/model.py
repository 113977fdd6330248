"""Records the tracker hands out about stored series, free of the database and of numpy.

The runs table and ``headroom runs`` list thousands of series by these summaries
without reading a point, so this module stays cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from core.shape import RunShape


@dataclass(frozen=True)
class Summary:
    """What the runs table needs of a series, without reading its points."""

    count: int
    first_step: int | None
    last_step: int | None
    min: float | None
    max: float | None
    last: float | None
    first_nonfinite_step: int | None


@dataclass(frozen=True)
class SeriesInfo(Summary):
    """A stored series: which one, and its summary statistics."""

    id: int = field(kw_only=True)
    name: str = field(kw_only=True)
    original_name: str = field(kw_only=True)


@dataclass(frozen=True)
class SourceStat:
    """A source file as it was when read: for change detection on the next ingest."""

    path: str
    size: int
    mtime: float
    sha256: str


@dataclass(frozen=True)
class PartInfo:
    """A log that joined a run as part of its job: another logger, or a GPU sampler."""

    id: int
    source_path: str
    name: str
    format: str
    role: str  # "logger" or "system"
    metrics: list[str]  # the series it brought
    duplicates: list[str]  # the series it held identical to the run's (kept once)
    note: str = ""  # how a sampler's samples were placed on the steps
    files: tuple[str, ...] = ()  # the files it was read from


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
    colour: str = ""  # "#rrggbb", the same in every view
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


@dataclass(frozen=True)
class RunDetails:
    """What the Details tab shows of one run, read in one transaction: an ingest that merges
    the run into another between two reads cannot leave the tab half filled."""

    summary: RunSummary
    config: dict[str, Any]
    final_values: dict[str, Any]  # figures the log states once (train_runtime, total_flos...)
    sources: list[SourceStat]
    parts: list[PartInfo]


class StoredRun(Protocol):
    """What code outside ``tracker/db`` reads of a stored run (the database's rows have it)."""

    id: int
    name: str
    format: str
    source_path: str
    kept_apart: bool
    shape: dict[str, Any]
    config: dict[str, Any]
    summary: dict[str, Any]
    resumed_from: str | None


class StoredPart(Protocol):
    """A log that joined another run as a part of its job, as code outside ``tracker/db``
    reads it."""

    id: int
    run_id: int
    role: str
    source_key: str
    metrics: list[str]
    duplicates: list[str]
