"""Statuses every layer names the same way: a run's, an ingested file's, a checkpoint's.

A run's status is what its log states, and whether a silent run has died.

Logs say "finished" or "crashed" when they record an end; a run whose log
stops growing without one is "crashed?" once it has been silent longer than
the user is willing to wait. The rule lives here so `headroom runs` and the
app say the same of the same run.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    CRASHED = "crashed"
    STALE = "crashed?"  # silent for longer than the stale time, with no recorded end
    UNKNOWN = "unknown"


class IngestStatus(StrEnum):
    """What an ingest did with one file or folder."""

    INGESTED = "ingested"
    UPDATED = "updated"  # a run already stored grew, or its log was re-read
    DUPLICATE = "duplicate"  # its content is stored already
    SKIPPED = "skipped"  # looks like a log, but no reader claims it
    IGNORED = "ignored"  # not a log at all (a config, a README)
    ERROR = "error"


class CheckpointStatus(StrEnum):
    """Where a checkpoint stands on disk."""

    OK = "ok"
    LFS = "lfs"  # Git-LFS pointer files, not the weights
    MISSING = "missing"  # a log names it; the files are gone
    UNREADABLE = "unreadable"
    DELETED = "deleted"  # moved to the trash by a retention plan
    LOGGED = "logged"  # stored from a log before any scan looked for it


STALE_AFTER_S = 600.0  # a running run silent this long is shown as "crashed?"


def live_status(stored: str, last_data_at: datetime | None, now: datetime,
                stale_after_s: float = STALE_AFTER_S, grew: bool = True) -> RunStatus:
    """``stored`` status, or running / "crashed?" by how long ago the logs last grew.

    A log whose format cannot say it is running counts as running only once it
    was seen growing after its first read (``grew``): a log copied today is
    fresh on disk, not alive.
    """
    if stored in (RunStatus.FINISHED, RunStatus.CRASHED):
        return RunStatus(stored)
    fresh = last_data_at is not None and (now - last_data_at).total_seconds() < stale_after_s
    if fresh and (stored == RunStatus.RUNNING or grew):
        return RunStatus.RUNNING
    return RunStatus.STALE if stored == RunStatus.RUNNING else RunStatus.UNKNOWN
