"""Ingest: find the logs under the given paths, read each, store each in one transaction.

One bad file never stops the others and never leaves half a run behind; the
report says, per file, what happened in words a person understands. Re-ingest
of an unchanged file is a no-op; a log that grew gets only its new points.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
import socket
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.runlog import RunLog
from core.status import IngestStatus
from tracker import jobs
from tracker.db import jobs as parts_store
from tracker.db import runs as run_store
from tracker.db.errors import AlreadyStored, StorageError
from tracker.enrich import enrich
from tracker.model import SourceStat
from tracker.readers import Reader, ReaderError, Sample, best_reader, labels, looks_like_log
from tracker.readers._common import describe, special_kind
from tracker.store import Store

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, str], None]
CancelFn = Callable[[], bool]

# Folders that never hold a user's run logs.
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", ".git", ".venv", "venv", ".hg", ".svn"}
STATUSES = tuple(s for s in IngestStatus if s is not IngestStatus.IGNORED)
NO_METRICS = "no metrics in this run: it is stored, but there is nothing to plot"


@dataclass
class FileResult:
    """What happened to one file or run folder."""

    path: str
    status: IngestStatus
    reason: str = ""
    format: str | None = None
    run_id: int | None = None
    run_name: str | None = None
    points: int = 0
    warnings: list[str] = field(default_factory=list)
    # Runs stored before that this file's run took in (a GPU sampler log beside it).
    absorbed: list[int] = field(default_factory=list)


@dataclass
class IngestReport:
    """Per-file outcomes of one ingest, in the order the files were met."""

    results: list[FileResult] = field(default_factory=list)
    cancelled: bool = False
    ignored: int = 0  # files in walked folders that are not logs (images, code, weights)

    @property
    def ok(self) -> bool:
        """True when nothing failed (duplicates and skips are fine)."""
        return not any(r.status == IngestStatus.ERROR for r in self.results)

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "cancelled": self.cancelled,
            "counts": self.counts(),
            "ignored": self.ignored,
            "files": [asdict(r) for r in self.results],
        }


@dataclass(frozen=True)
class _Unit:
    """A file or a claimed run folder to ingest as one transaction."""

    path: Path
    explicit: bool
    reader: Reader | None = None


def ingest(
    store: Store,
    paths: Iterable[str | os.PathLike],
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    refresh: bool = False,
) -> IngestReport:
    """Ingest files and folders into ``store``; see the module docstring.

    Logs of one job join one run (:mod:`tracker.jobs`). ``refresh`` reads and stores
    files again even when unchanged (a run just split off a job takes back its own
    metadata).
    """
    report = IngestReport()
    units = _discover([Path(p) for p in paths], report)
    unread: list[tuple[_Unit, FileResult]] = []
    log_folders: set[Path] = set()
    for done, unit in enumerate(units):
        if cancel is not None and cancel():
            report.cancelled = True
            break
        if progress is not None:
            progress(done, len(units), str(unit.path))
        for result in _ingest_unit(store, unit, refresh):
            if result.format is not None:
                log_folders.add(unit.path.parent)
            if result.status == IngestStatus.IGNORED:
                report.ignored += 1
            elif result.status == IngestStatus.SKIPPED and result.format is None:
                unread.append((unit, result))
            else:
                report.results.append(result)
    _report_unread(report, unread, log_folders)
    _follow_absorbed(report)
    if progress is not None and not report.cancelled:
        progress(len(units), len(units), "")
    return report


def _follow_absorbed(report: IngestReport) -> None:
    """Files whose run a later file's run took in now name the run they joined."""
    moved = {old: r for r in report.results for old in r.absorbed}
    for result in report.results:
        while result.run_id in moved and moved[result.run_id] is not result:
            joined = moved[result.run_id]
            result.run_id, result.run_name = joined.run_id, joined.run_name
            result.reason = f"joined run {joined.run_id} ({joined.run_name})"


def _report_unread(report: IngestReport, unread: list, log_folders: set[Path]) -> None:
    """Unrecognised files beside a log are its companions (args.json, meta.yaml, a
    DeepSpeed config): the readers take them in with the log, so they are not news."""
    for unit, result in unread:
        if unit.path.parent in log_folders:
            report.ignored += 1
        else:
            report.results.append(result)


# Finding the units


def _discover(paths: list[Path], report: IngestReport) -> list[_Unit]:
    units: list[_Unit] = []
    seen: set[tuple[int, int]] = set()
    for path in paths:
        path = Path(os.path.abspath(path.expanduser()))
        if not path.exists():
            report.results.append(FileResult(str(path), IngestStatus.ERROR, "no such file or folder"))
        elif path.is_dir():
            _walk(path, units, seen, report, explicit=True)
        else:
            units.append(_Unit(path, explicit=True))
    return units


def _walk(folder: Path, units: list[_Unit], seen: set, report: IngestReport, explicit: bool) -> None:
    try:
        st = folder.stat()
    except OSError as err:
        reason = f"cannot open folder: {err.strerror}"
        report.results.append(FileResult(str(folder), IngestStatus.ERROR, reason))
        return
    if (st.st_dev, st.st_ino) in seen:
        reason = "folder already visited (symlink loop)"
        report.results.append(FileResult(str(folder), IngestStatus.SKIPPED, reason))
        return
    seen.add((st.st_dev, st.st_ino))
    reader = _folder_reader(folder, report)
    if reader is not None:
        units.append(_Unit(folder, explicit=explicit, reader=reader))
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as err:
        reason = f"cannot list folder: {err.strerror}"
        report.results.append(FileResult(str(folder), IngestStatus.ERROR, reason))
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_dir():
            if entry.name not in SKIP_DIRS and not entry.name.startswith(".") and not _alias(entry):
                _walk(path, units, seen, report, explicit=False)
        elif entry.is_file():
            units.append(_Unit(path, explicit=False))


def _folder_reader(folder: Path, report: IngestReport) -> Reader | None:
    """The reader that claims ``folder`` as one run. When none does and a sniffer failed (or the
    choice itself did), the folder's line in the report says so; the walk goes on into its files."""
    sample = Sample(folder)
    try:
        reader = best_reader(sample)
    except Exception as err:  # a reader bug must not stop the walk
        log.debug("choosing a reader for %s failed", folder, exc_info=True)
        reason = f"could not sniff the folder ({describe(err)})"
        report.results.append(FileResult(str(folder), IngestStatus.ERROR, reason))
        return None
    if reader is None and sample.failures:
        reason = "; ".join(sample.failures) + ": its files are read one by one"
        report.results.append(FileResult(str(folder), IngestStatus.SKIPPED, reason))
    return reader if reader is not None and reader.accepts_directories else None


def _alias(entry: os.DirEntry) -> bool:
    """A symlink to a folder beside it (W&B's ``latest-run``): the walk meets that folder anyway."""
    if not entry.is_symlink():
        return False
    target = os.path.realpath(entry.path)
    return os.path.dirname(target) == os.path.realpath(os.path.dirname(entry.path))


# Ingesting one unit


def _ingest_unit(store: Store, unit: _Unit, refresh: bool = False) -> list[FileResult]:
    path = unit.path
    result = FileResult(str(path), IngestStatus.ERROR)
    refused = _refused(path)
    if refused:
        return [_quiet(unit, result, refused)]
    try:
        if path.is_file() and path.stat().st_size == 0:
            return [_quiet(unit, result, "empty file")]
        sample = Sample(path)
        reader = unit.reader or best_reader(sample)
        if reader is None and path.is_file() and sample.binary:
            return [_quiet(unit, result, "binary data, not a training log")]
        if reader is None:
            failed = "".join(f"; {failure}" for failure in sample.failures)
            return [_quiet(unit, result, f"unrecognised format (tried: {labels()}){failed}")]
        result.format = reader.name
        if not refresh and _unchanged(store, path):
            result.status, result.reason = IngestStatus.DUPLICATE, "unchanged since last ingest"
            return [result]
        logs, before = _read_hashing(reader, path) if path.is_file() else (reader.read(path), None)
        return [_store_log(store, path, log, before, len(logs) > 1, refresh) for log in logs]
    except ReaderError as err:
        result.reason = str(err)
    except StorageError as err:
        result.reason = _db_reason(err)
    except OSError as err:
        result.reason = f"cannot read: {err.strerror or err}"
    except Exception as err:  # a reader bug must not stop the other files, nor print a traceback
        log.debug("reader failed on %s", path, exc_info=True)
        result.reason = f"could not read ({describe(err)})"
    return [result]


def _refused(path: Path) -> str | None:
    """Why a path is not even opened: a FIFO (an open would block), a socket, a device, a
    name that is not UTF-8 (it could not be stored)."""
    kind = special_kind(path)
    if kind is not None:
        return f"not a regular file ({kind}): skipped"
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8: rename it to ingest it"
    return None


def _quiet(unit: _Unit, result: FileResult, reason: str) -> FileResult:
    """An unreadable file met in a folder walk is a skip, unless it looks like a log."""
    result.reason = reason
    if not unit.explicit:
        result.status = IngestStatus.SKIPPED if looks_like_log(unit.path) else IngestStatus.IGNORED
    return result


def _store_log(
    store: Store, path: Path, log: RunLog, before: list[SourceStat] | None, keyed: bool,
    refresh: bool = False,
) -> FileResult:
    sources = before or _stat_sources(log.sources)
    source_key = str(path) + (f"#{log.key}" if keyed or log.key else "")
    content_key = _content_hash(path, sources) + (f"#{log.key}" if log.key else "")
    result = FileResult(str(path), IngestStatus.INGESTED, format=log.format, run_name=log.name,
                        warnings=list(log.warnings))
    if not log.series:
        result.warnings.append(NO_METRICS)
    try:
        with store.session() as s:
            existing = run_store.by_source(s, source_key)
            part = None if existing else parts_store.part_by_source(s, source_key)
            owner = parts_store.content_owner(s, content_key)
            if owner is not None and not (refresh and existing is not None):
                return _known_content(s, result, owner, existing, part, sources)
            if part is not None:
                result.points = jobs.update_part(s, part, log, sources, content_key)
                result.run_id, result.run_name = part.run_id, run_store.name_of(s, part.run_id)
                result.status = IngestStatus.UPDATED
                result.reason = f"part of run {part.run_id}: {result.points} new points"
                return result
            run_id, points = run_store.save(
                s, log, source_key, content_key, sources, existing, _user(), socket.gethostname()
            )
            enrich(s, run_id, path, log)
            result.run_id, result.points = run_id, points
            if existing is not None:
                result.status = IngestStatus.UPDATED
                result.reason = f"{points} new points" if points else "metadata updated"
                jobs.diagnose_if_joined(s, run_id)
            else:
                _join(s, result)
    except AlreadyStored:
        # Another process stored the same content between our check and our insert.
        result.status, result.reason = IngestStatus.DUPLICATE, "stored concurrently by another ingest"
    except StorageError as err:
        result.status, result.reason = IngestStatus.ERROR, _db_reason(err)
    return result


def _known_content(session, result: FileResult, owner: tuple[int, str], existing, part,
                   sources: list[SourceStat]) -> FileResult:
    """The content is stored already: this very log unchanged, or a copy of another."""
    run_id, where = owner
    result.status, result.run_id = IngestStatus.DUPLICATE, run_id
    result.run_name = run_store.name_of(session, run_id)
    mine = (existing is not None and existing.id == run_id) or (
        part is not None and part.run_id == run_id)
    result.reason = "unchanged" if mine else f"same content as run {run_id} ({where})"
    if mine:
        run_store.refresh_stats(session, run_id, sources)
    return result


def _join(session, result: FileResult) -> None:
    """A new run joins its job (another log of the training, a GPU sampler) if it has one."""
    joined = jobs.join(session, result.run_id)
    result.absorbed = list(joined.absorbed)
    if joined.run_id != result.run_id or joined.absorbed:
        result.run_id, result.run_name = joined.run_id, joined.run_name
        result.reason = joined.note
        jobs.diagnose(session, joined.run_id)


def _db_reason(err: StorageError) -> str:
    what = "database connection lost" if err.connection_lost else "database error"
    return f"{what} ({err}); nothing of this file was stored"


def _unchanged(store: Store, path: Path) -> bool:
    """True when every source file of the run(s) or parts from ``path`` has its stored size
    and mtime."""
    with store.session() as s:
        rows = parts_store.source_rows(s, str(path))
    if not rows:
        return False
    for row in rows:
        try:
            st = os.stat(row.path)
        except OSError:
            return False
        if st.st_size != row.size or st.st_mtime != row.mtime:
            return False
    return True


def _read_hashing(reader: Reader, path: Path) -> tuple[list[RunLog], list[SourceStat]]:
    """Read a file while a second thread hashes it: hashing and file reads release the GIL,
    so a big log's hash costs no time beside its parse."""
    st = os.stat(path)
    with ThreadPoolExecutor(1) as pool:
        digest = pool.submit(_digest, path, st.st_size)
        logs = reader.read(path)
        return logs, [SourceStat(_absolute(path), st.st_size, st.st_mtime, digest.result())]


def _stat_sources(paths: list[Path]) -> list[SourceStat]:
    stats = []
    for p in paths:
        st = os.stat(p)
        stats.append(SourceStat(_absolute(p), st.st_size, st.st_mtime, _digest(p, st.st_size)))
    return stats


def _digest(path: Path, size: int) -> str:
    """SHA-256 of the first ``size`` bytes: what a growing log held when it was stat'ed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while size > 0 and (chunk := f.read(min(size, 1 << 20))):
            h.update(chunk)
            size -= len(chunk)
    return h.hexdigest()


def _absolute(path: Path) -> str:
    return str(Path(os.path.abspath(path)))


def _content_hash(root: Path, sources: list[SourceStat]) -> str:
    """The file's hash, or for a folder a hash over its files' names and hashes."""
    if len(sources) == 1 and sources[0].path == str(root):
        return sources[0].sha256
    h = hashlib.sha256()
    for s in sorted(sources, key=lambda s: s.path):
        name = os.path.relpath(s.path, root) if root.is_dir() else os.path.basename(s.path)
        h.update(f"{name}\0{s.sha256}\n".encode())
    return h.hexdigest()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
