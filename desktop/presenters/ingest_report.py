"""An ingest report as the ingest panel lists it: files under the run they formed, errors
never hidden.

Logs of one job form one run (another logger, a GPU sampler), so the report
groups the files by the run they went into; files that formed no run come
first. A file name that several rows share ("version_0", "metrics.csv") is
shown with the folders that tell the rows apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the ingest module loads the ORM: the window shows before it is needed
    from tracker.ingest import IngestReport

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
    shown: str = ""  # the file as the list names it: its name, with folders where needed


@dataclass
class ReportGroup:
    """The files that went into one run (``run_id`` None: files that formed no run)."""

    run_id: int | None
    title: str
    rows: list[ReportRow] = field(default_factory=list)


def rows(report: IngestReport) -> list[ReportRow]:
    shown = _shown_names([r.path for r in report.results])
    return [
        ReportRow(r.status, r.path, r.format or "", r.run_name or "", _detail(r), name)
        for r, name in zip(report.results, shown, strict=True)
    ]


def groups(report: IngestReport) -> list[ReportGroup]:
    """Rows under the run each file went into, in the order the runs were met."""
    found: dict[int | None, ReportGroup] = {}
    for result, row in zip(report.results, rows(report), strict=True):
        key = result.run_id
        if key not in found:
            found[key] = ReportGroup(key, "Not stored" if key is None else
                                     f"run {key} · {result.run_name or ''}")
        found[key].rows.append(row)
    ordered = sorted(found.values(), key=lambda g: g.run_id is not None)
    for group in ordered:
        group.title += f" ({len(group.rows)} file{'s' * (len(group.rows) != 1)})"
    return ordered


def _shown_names(paths: list[str]) -> list[str]:
    """Each path's last part, with as many folders above it as tell equal names apart."""
    parts = [PurePath(p).parts for p in paths]
    shown = []
    for i, mine in enumerate(parts):
        depth = 1
        while depth < len(mine) and any(
                j != i and other[-depth:] == mine[-depth:] for j, other in enumerate(parts)):
            depth += 1
        shown.append(os.path.join(*mine[-depth:]) if mine else paths[i])
    return shown


def _detail(result) -> str:
    parts = [result.reason] if result.reason else []
    if result.status == "ingested" and result.points:
        parts.append(f"{result.points:,} points")
    parts += [f"warning: {w}" for w in result.warnings]
    return "; ".join(parts)


def summary(report: IngestReport) -> str:
    """One line: "3 ingested, 1 duplicate, 1 error" (and whether it was cancelled)."""
    from tracker.ingest import STATUSES

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
