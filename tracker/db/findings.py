"""The finding table as the runs table reads it: each run's worst severity.

Kept apart from :mod:`tracker.diagnose` (which runs the rules) so that listing
runs never loads the diagnostics or numpy.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, select

from core.diagnostics.finding import Finding, worst
from tracker.db.schema import FindingRow
from tracker.db.unit import Unit


def severities(unit: Unit, run_ids: Iterable[int] | None = None) -> dict[int, str]:
    """The worst finding severity of each run that has findings."""
    query = select(FindingRow.run_id, FindingRow.severity)
    if run_ids is not None:
        query = query.where(FindingRow.run_id.in_(list(run_ids)))
    by_run: dict[int, list[str]] = {}
    for run_id, severity in unit.session.execute(query):
        by_run.setdefault(run_id, []).append(severity)
    return {run_id: worst(found) for run_id, found in by_run.items()}


def replace(unit: Unit, run_id: int, findings: list[Finding]) -> None:
    """Store a run's findings in place of the previous ones."""
    unit.session.execute(delete(FindingRow).where(FindingRow.run_id == run_id))
    unit.session.add_all(_row(run_id, f) for f in findings)
    unit.session.flush()


def load(unit: Unit, run_id: int) -> list[Finding]:
    """A run's stored findings, as the rules ordered them."""
    rows = unit.session.execute(
        select(FindingRow).where(FindingRow.run_id == run_id).order_by(FindingRow.id)
    ).scalars()
    return [_finding(r) for r in rows]


def _row(run_id: int, finding: Finding) -> FindingRow:
    return FindingRow(
        run_id=run_id, kind=finding.kind, severity=finding.severity,
        step_start=finding.step_start, step_end=finding.step_end, message=finding.message,
        cause=finding.cause, remedy=finding.remedy,
        evidence={"values": _jsonable(finding.evidence), "metric": finding.metric,
                  "marks": [int(m) for m in finding.marks]},
    )


def _finding(row: FindingRow) -> Finding:
    stored = dict(row.evidence or {})
    return Finding(
        row.kind, row.severity, row.message, row.cause, row.remedy, row.step_start, row.step_end,
        stored.get("metric"), tuple(stored.get("marks") or ()), dict(stored.get("values") or {}),
    )


def _jsonable(value: Any) -> Any:
    """Plain JSON: numpy scalars as Python numbers, NaN and Inf as None, paths as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # numpy unimported here
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
