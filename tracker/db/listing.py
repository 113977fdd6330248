"""Run summaries read with the standard library's sqlite3: ``headroom runs`` in a blink.

Importing SQLAlchemy and its ORM takes about a third of a second, more than the
whole listing of a local database. When the database is a local SQLite file at the
schema revision this code knows, :func:`summaries` reads what
:func:`tracker.db.runs.summaries` reads, with the same queries, and returns the same
:class:`~tracker.model.RunSummary` records; otherwise it answers None and the
caller opens the :class:`~tracker.store.Store` (a server, an older or newer schema,
a new file to create). It only reads: the database is opened read-only.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from core.diagnostics.finding import worst
from core.palette import fallback
from core.shape import RunShape
from tracker.db.engine import head_revision
from tracker.model import RunSummary, SeriesInfo

_PREFIX = "sqlite:///"
# The queries tracker.db.runs.summaries and tracker.db.findings.severities send, as
# SQLAlchemy writes them for SQLite, so SQLite plans them alike and rows come in one order.
_RUNS = ("SELECT id, name, format, source_path, started_at, ingested_at, status, notes, shape, "
         "last_data_at, colour, JSON_QUOTE(JSON_EXTRACT(config, '$.\"plan\"')) FROM run "
         "ORDER BY id DESC")
_TAGS = "SELECT run_id, tag FROM run_tag ORDER BY tag"
_SERIES = ("SELECT run_id, id, name, original_name, count, first_step, last_step, min, max, last, "
           "first_nonfinite_step FROM series")
_SEVERITIES = "SELECT run_id, severity FROM finding"


def summaries(url: str) -> list[RunSummary] | None:
    """Every run's summary, newest first, as ``Store(url).runs()`` gives them; None when
    this path cannot answer for ``url`` and the store must be opened instead."""
    path = _local_file(url)
    if path is None:
        return None
    try:
        with _read_only(path) as conn:
            if not _at_head(conn):
                return None
            return _summaries(conn)
    except sqlite3.Error:  # locked past the wait, not a database: the store says it properly
        return None


def _local_file(url: str) -> Path | None:
    """The file of an SQLite URL without options; None for anything else or a missing file."""
    if not url.startswith(_PREFIX) or "?" in url:
        return None
    path = Path(url[len(_PREFIX):])
    return path if path.name not in ("", ":memory:") and path.is_file() else None


def _read_only(path: Path) -> closing[sqlite3.Connection]:
    """A read-only connection, closed on leaving (sqlite3's own context only ends transactions)."""
    return closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=30))


def _at_head(conn: sqlite3.Connection) -> bool:
    """Whether the schema is the newest this code knows (else the store migrates or refuses)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'alembic_version'").fetchone():
        return False
    stamped = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    head = head_revision()
    return head is not None and stamped == [(head,)]


def _summaries(conn: sqlite3.Connection) -> list[RunSummary]:
    runs = conn.execute(_RUNS).fetchall()
    tags: dict[int, list[str]] = defaultdict(list)
    for run_id, tag in conn.execute(_TAGS):
        tags[run_id].append(tag)
    infos: dict[int, dict[str, SeriesInfo]] = defaultdict(dict)
    for run_id, series_id, name, original, *stats in conn.execute(_SERIES):
        infos[run_id][name] = SeriesInfo(*stats, id=series_id, name=name, original_name=original)
    found: dict[int, list[str]] = defaultdict(list)
    for run_id, severity in conn.execute(_SEVERITIES):
        found[run_id].append(severity)
    return [_summary(row, tags[row[0]], infos[row[0]], worst(found.get(row[0], ())))
            for row in runs]


def _summary(row: tuple, tags: list[str], series: dict[str, SeriesInfo],
             severity: str | None) -> RunSummary:
    (run_id, name, fmt, source_path, started, ingested, status, notes, shape, last_data, colour,
     plan) = row
    plan = None if plan is None else json.loads(plan)
    return RunSummary(
        id=run_id, name=name, format=fmt, source_path=source_path, started_at=_time(started),
        ingested_at=_time(ingested), status=status, notes=notes,
        shape=RunShape.from_dict(None if shape is None else json.loads(shape)), tags=tags,
        series=series, severity=severity,
        last_data_at=_time(last_data),
        colour=colour or fallback(run_id), plan=plan if isinstance(plan, dict) else None,
    )


def _time(text: str | None) -> datetime | None:
    """A time column as the schema's type reads it back: stored in UTC without a zone."""
    if text is None:
        return None
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=UTC) if when.utcoffset() is None else when.astimezone(UTC)
