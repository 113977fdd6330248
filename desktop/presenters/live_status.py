"""A run's status as the app shows it: colours, tooltips and the status column's text.

Whether a silent run has died is core's rule (:mod:`core.status`), applied to
stored runs by :mod:`tracker.liveness` for the app and ``headroom runs`` alike.
"""

from __future__ import annotations

from datetime import datetime

from core.status import RunStatus
from tracker.model import RunSummary

COLOURS = {RunStatus.RUNNING: "#2e7d32", RunStatus.CRASHED: "#c62828",
           RunStatus.STALE: "#e65100"}
EXPLAINED = {
    RunStatus.RUNNING: "new points arrived recently",
    RunStatus.FINISHED: "the log records the end of training",
    RunStatus.CRASHED: "the log records an out-of-memory error, an exception or a failed exit",
    RunStatus.STALE: "the log stopped growing before it recorded an end",
}


def cell(status: str) -> str:
    """The status column's text: blank when the log cannot tell."""
    return "" if status == RunStatus.UNKNOWN else str(status)


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
