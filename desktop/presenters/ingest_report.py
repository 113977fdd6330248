"""An ingest report as the ingest panel lists it: one row per file, errors never hidden."""

from __future__ import annotations

from dataclasses import dataclass

from tracker.ingest import STATUSES, IngestReport

# Status -> colour of its label (errors red, duplicates grey: nothing went wrong).
STATUS_COLOURS = {
    "ingested": "#2e7d32", "updated": "#1565c0", "duplicate": "#757575",
    "skipped": "#8d6e63", "error": "#c62828",
}


@dataclass(frozen=True)
class ReportRow:
    status: str
    path: str
    format: str
    run: str
    detail: str  # the reason, the points stored, and any warnings


def rows(report: IngestReport) -> list[ReportRow]:
    return [
        ReportRow(r.status, r.path, r.format or "", r.run_name or "", _detail(r))
        for r in report.results
    ]


def _detail(result) -> str:
    parts = [result.reason] if result.reason else []
    if result.status == "ingested" and result.points:
        parts.append(f"{result.points:,} points")
    parts += [f"warning: {w}" for w in result.warnings]
    return "; ".join(parts)


def summary(report: IngestReport) -> str:
    """One line: "3 ingested, 1 duplicate, 1 error" (and whether it was cancelled)."""
    counts = report.counts()
    parts = [f"{counts[s]} {s if counts[s] == 1 or s != 'error' else 'errors'}"
             for s in STATUSES if counts[s]]
    warned = sum(bool(r.warnings) for r in report.results if r.status != "error")
    if warned:
        parts.append(f"{warned} with warnings")
    if report.ignored:
        parts.append(f"{report.ignored} other files ignored")
    text = ", ".join(parts) or "nothing to ingest"
    return f"Cancelled: {text}" if report.cancelled else text
