"""The team tracker: try and open its database, publish local runs to it, take runs offline.

The copy is idempotent because a run's ``content_key`` (hash of its source
content) is unique in every store: a run already in the target is skipped, and
two people publishing the same run at once cannot both insert it. Each run is
copied in one transaction, so a lost connection or a cancel stops the copy
between runs: the runs copied so far stay, the rest are reported as not copied.
The command line and the app run this one loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tracker.db import copy
from tracker.db.engine import SchemaError, normalize_url, survey
from tracker.db.errors import AlreadyStored, StorageError
from tracker.store import Store


class TeamError(RuntimeError):
    """The team database cannot be reached or used; the message says why in one line."""


def probe(url: str) -> str:
    """Try a database without changing it: what opening it would find, in words.

    Raises TeamError when the server cannot be reached or refuses the login, and
    SchemaError when a newer Headroom wrote the schema.
    """
    try:
        state, runs = survey(normalize_url(url))
    except StorageError as err:
        raise TeamError(str(err)) from None
    if state == "newer":
        raise SchemaError("the database schema is newer than this Headroom understands; "
                          "upgrade Headroom to open it")
    if state == "empty":
        return "Connected. The database is empty: Headroom creates its tables when you connect."
    upgraded = " (its tables are upgraded when you connect)" if state == "older" else ""
    return f"Connected. {runs:,} run{'s' * (runs != 1)} in the team database{upgraded}."


def open_store(url: str) -> Store:
    """The team database, its tables created or upgraded; TeamError or SchemaError when not."""
    try:
        return Store(url)
    except StorageError as err:
        raise TeamError(str(err)) from None


@dataclass
class CopyReport:
    """Which runs were copied (source id → target id), which the target already had, and,
    when the copy stopped early, why and the runs it did not get to."""

    copied: dict[int, int] = field(default_factory=dict)
    already_there: dict[int, int] = field(default_factory=dict)
    not_copied: list[int] = field(default_factory=list)
    error: str = ""  # the driver's words when a database failed or the connection was lost
    cancelled: bool = False

    def to_dict(self) -> dict:
        return {"copied": self.copied, "already_there": self.already_there,
                "not_copied": self.not_copied, "error": self.error or None,
                "cancelled": self.cancelled}


def copy_runs(source: Store, target: Store, run_ids: list[int],
              progress: Callable[[int, int, str], None] | None = None,
              cancel: Callable[[], bool] | None = None) -> CopyReport:
    """Copy runs with their series, events, checkpoints, tags and findings, one transaction each.

    ``cancel`` is asked before each run; a database error (a dropped connection) stops the
    copy too. Either way the runs copied so far stay copied, the run in flight was not
    half-stored, and the report lists the runs not copied. ``progress(done, total, name)``
    follows each run.
    """
    report = CopyReport()
    for done, run_id in enumerate(run_ids):
        if cancel is not None and cancel():
            report.cancelled, report.not_copied = True, list(run_ids[done:])
            break
        try:
            _copy_one(source, target, run_id, report)
        except StorageError as err:
            report.error, report.not_copied = str(err), list(run_ids[done:])
            break
        if progress is not None:
            progress(done + 1, len(run_ids), f"run {run_id}")
    return report


def _copy_one(source: Store, target: Store, run_id: int, report: CopyReport) -> None:
    with source.session() as src:
        key = copy.content_key(src, run_id)
        if key is None:  # deleted since it was chosen
            return
        existing = _holding(target, key)
        if existing is not None:
            report.already_there[run_id] = existing
            return
        try:
            with target.session() as dst:
                new_id = copy.copy_run(src, dst, run_id)
        except AlreadyStored:  # published concurrently by someone else
            report.already_there[run_id] = _holding(target, key) or -1
            return
        report.copied[run_id] = new_id  # once its transaction committed, not before


def _holding(store: Store, key: str) -> int | None:
    with store.session() as unit:
        return copy.holding(unit, key)
