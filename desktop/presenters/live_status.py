"""A run's status as the app shows it: running, finished, crashed, or "crashed?" once silent.

The store keeps what the log states (finished, crashed, running, unknown) and
when its logs last brought new points. Whether a silent run has died depends
on how long the user is willing to wait, so it is decided here, when runs are
shown, against the configured stale time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from tracker.db.runs import RunSummary

RUNNING, FINISHED, CRASHED, STALE, UNKNOWN = "running", "finished", "crashed", "crashed?", "unknown"
COLOURS = {RUNNING: "#2e7d32", CRASHED: "#c62828", STALE: "#e65100"}
EXPLAINED = {
    RUNNING: "new points arrived recently",
    FINISHED: "the log records the end of training",
    CRASHED: "the log records an out-of-memory error, an exception or a failed exit",
    STALE: "the log stopped growing before it recorded an end",
}


def live_status(stored: str, last_data_at: datetime | None, now: datetime,
                stale_after_s: float, grew: bool = True) -> str:
    """``stored`` status, or running/"crashed?" by how long ago the logs last grew.

    A log whose format cannot say it is running counts as running only once it
    was seen growing after its first read (``grew``): a log copied today is
    fresh on disk, not alive.
    """
    if stored in (FINISHED, CRASHED):
        return stored
    fresh = last_data_at is not None and (now - last_data_at).total_seconds() < stale_after_s
    if fresh and (stored == RUNNING or grew):
        return RUNNING
    return STALE if stored == RUNNING else UNKNOWN


def apply(runs: Iterable[RunSummary], now: datetime, stale_after_s: float) -> float | None:
    """Set each run's shown status; seconds until the next running run turns stale, if any."""
    soonest = None
    for run in runs:
        run.status = live_status(run.status, run.last_data_at, now, stale_after_s, _grew(run))
        if run.status == RUNNING and run.last_data_at is not None:
            left = stale_after_s - (now - run.last_data_at).total_seconds()
            soonest = left if soonest is None else min(soonest, left)
    return soonest


def _grew(run: RunSummary) -> bool:
    """New points arrived after the run was first stored (the columns keep UTC without a zone)."""
    first = run.ingested_at
    if first.tzinfo is None:
        first = first.replace(tzinfo=UTC)
    return run.last_data_at is not None and run.last_data_at > first


def cell(status: str) -> str:
    """The status column's text: blank when the log cannot tell."""
    return "" if status == UNKNOWN else status


def tooltip(run: RunSummary, now: datetime) -> str:
    """Why the run has its status, and how long its logs have been silent."""
    why = EXPLAINED.get(run.status)
    lines = [f"{run.status}: {why}" if why else "the log does not say how the run ended"]
    if run.last_data_at is not None:
        lines.append(f"last new points {ago((now - run.last_data_at).total_seconds())}")
    return "\n".join(lines)


def ago(seconds: float) -> str:
    """"just now", "12 s ago", "5 min ago", "3 h ago", "4 days ago"."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return "just now" if seconds < 5 else f"{seconds:.0f} s ago"
