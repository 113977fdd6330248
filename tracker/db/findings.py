"""The finding table as the runs table reads it: each run's worst severity.

Kept apart from :mod:`tracker.diagnose` (which runs the rules) so that listing
runs never loads the diagnostics or numpy.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.diagnostics.finding import worst
from tracker.db.schema import FindingRow


def severities(session: Session, run_ids: Iterable[int] | None = None) -> dict[int, str]:
    """The worst finding severity of each run that has findings."""
    query = select(FindingRow.run_id, FindingRow.severity)
    if run_ids is not None:
        query = query.where(FindingRow.run_id.in_(list(run_ids)))
    by_run: dict[int, list[str]] = {}
    for run_id, severity in session.execute(query):
        by_run.setdefault(run_id, []).append(severity)
    return {run_id: worst(found) for run_id, found in by_run.items()}
