"""Stored runs shown with their live status (core.status), for the command line and the app."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from core.status import STALE_AFTER_S, RunStatus, live_status
from tracker.model import RunSummary


def apply(runs: Iterable[RunSummary], now: datetime,
          stale_after_s: float = STALE_AFTER_S) -> float | None:
    """Set each run's shown status; seconds until the next running run turns stale, if any."""
    soonest = None
    for run in runs:
        run.status = live_status(run.status, run.last_data_at, now, stale_after_s, _grew(run))
        if run.status == RunStatus.RUNNING and run.last_data_at is not None:
            left = stale_after_s - (now - run.last_data_at).total_seconds()
            soonest = left if soonest is None else min(soonest, left)
    return soonest


def _grew(run: RunSummary) -> bool:
    """New points arrived after the run was first stored (the columns keep UTC without a zone)."""
    first = run.ingested_at
    if first.tzinfo is None:
        first = first.replace(tzinfo=UTC)
    return run.last_data_at is not None and run.last_data_at > first
