"""Following runs while they train: which logs changed since the last look, as ingest units.

Polling, not change notifications, decides: a stat walk sees appends in any
subfolder and works on network filesystems where notifications never arrive
(the app adds notifications on top only to look sooner). A changed file is
mapped to the unit ingest would read it as — the run folder a reader claims
whole (``lightning_logs/version_0``, an HF output folder), else the file itself
when a reader claims it — so a live update is exactly what a fresh ingest of
the folder would store. A watched place that disappears is reported, not an
error; when it comes back it is read again whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tracker.ingest import SKIP_DIRS
from tracker.readers import best_reader

# A watched tree with more files than this is followed only in its first files, and said so.
MAX_FILES = 20_000
# Folders handed out for change notifications (inotify watches are a per-user resource).
MAX_FOLDERS = 500

Stamp = tuple[int, int]  # size, mtime in ns


@dataclass
class Changes:
    """What one look found."""

    units: list[Path] = field(default_factory=list)  # files and run folders to ingest again
    missing: list[Path] = field(default_factory=list)  # watched places gone since the last look
    folders: list[Path] = field(default_factory=list)  # folders seen, for change notifications
    files: list[Path] = field(default_factory=list)  # logs seen growing, for notifications
    truncated: list[Path] = field(default_factory=list)  # trees over MAX_FILES


class FolderWatch:
    """Remembers what each watched place looked like; :meth:`look` says what changed.

    A place seen for the first time (or again after it was gone) is itself a
    unit: ingest then reads it whole, and later looks report only changes.
    """

    def __init__(self, max_files: int = MAX_FILES) -> None:
        self.max_files = max_files
        self._stamps: dict[Path, dict[Path, Stamp]] = {}
        self._logs: dict[Path, None] = {}  # files seen growing, newest last
        self.gone: set[Path] = set()

    def look(self, places: Iterable[Path]) -> Changes:
        changes = Changes()
        places = [Path(os.path.abspath(p)) for p in places]
        for place in places:
            self._look_at(place, changes)
        dropped = set(self._stamps) - set(places)
        for place in dropped:
            del self._stamps[place]  # no longer watched
        if dropped:
            self._logs = {p: None for p in self._logs if _under(p, places)}
        self.gone &= set(places)
        changes.units = list(dict.fromkeys(changes.units))
        changes.folders = changes.folders[:MAX_FOLDERS]
        changes.files = list(self._logs)[-MAX_FOLDERS:]
        return changes

    def _look_at(self, place: Path, changes: Changes) -> None:
        stamps = _snapshot(place, self.max_files, changes)
        if stamps is None:
            if place not in self.gone:
                self.gone.add(place)
                changes.missing.append(place)
            self._stamps.pop(place, None)
            return
        self.gone.discard(place)
        before = self._stamps.get(place)
        self._stamps[place] = stamps
        if before is None:
            changes.units.append(place)
            return
        claims: dict[Path, bool] = {}
        for path, stamp in stamps.items():
            if before.get(path) != stamp:
                unit = place if path == place else unit_for(path, place, claims)
                if unit is not None:
                    changes.units.append(unit)
                    self._logs.pop(path, None)
                    self._logs[path] = None
        while len(self._logs) > MAX_FOLDERS:
            del self._logs[next(iter(self._logs))]


def unit_for(path: Path, root: Path, claims: dict[Path, bool] | None = None) -> Path | None:
    """What ingest reads ``path`` (a file under ``root``) as; None when no reader claims it.

    Folders are asked top-down, as the ingest walk does: the first one a reader
    claims whole is the unit.
    """
    claims = {} if claims is None else claims
    folder = root
    for part in (*path.parent.relative_to(root).parts, None):
        if folder not in claims:
            reader = best_reader(folder)
            claims[folder] = reader is not None and reader.accepts_directories
        if claims[folder]:
            return folder
        if part is None:
            break
        folder = folder / part
    return path if best_reader(path) is not None else None


def _under(path: Path, places: list[Path]) -> bool:
    return any(path == place or place in path.parents for place in places)


def _snapshot(place: Path, max_files: int, changes: Changes) -> dict[Path, Stamp] | None:
    """Size and mtime of the file, or of every file under the folder; None when it is gone."""
    try:
        st = place.stat()
    except OSError:
        return None
    if not place.is_dir():
        return {place: (st.st_size, st.st_mtime_ns)}
    stamps: dict[Path, Stamp] = {}
    folders = [place]
    while folders:
        folder = folders.pop()
        changes.folders.append(folder)
        if not _scan(folder, stamps, folders):
            continue
        if len(stamps) >= max_files:
            changes.truncated.append(place)
            break
    return stamps


def _scan(folder: Path, stamps: dict[Path, Stamp], folders: list[Path]) -> bool:
    """Stamp the files of one folder and queue its subfolders (the ingest walk's skips apply)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False  # unreadable or removed mid-walk: the next look tries again
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    folders.append(Path(entry.path))
            elif entry.is_file():
                st = entry.stat()
                stamps[Path(entry.path)] = (st.st_size, st.st_mtime_ns)
        except OSError:
            continue  # a file removed between listing and stat
    return True
