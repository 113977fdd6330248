"""The tracker's public face over the database: open it, list runs, read series, edit.

The desktop app and the command line call only this (and :mod:`tracker.ingest`);
the tables stay an implementation detail of :mod:`tracker.db`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from core.shape import RunShape
from tracker.db import findings as finding_store
from tracker.db import runs as run_store
from tracker.db.engine import default_url, display_url, normalize_url, open_engine
from tracker.db.runs import USER_SOURCE
from tracker.db.unit import Unit, unit_of_work
from tracker.model import PartInfo, RunDetails, RunSummary, SeriesInfo, StoredRun

if TYPE_CHECKING:
    from core.checkpoints import Checkpoint
    from core.diagnostics import Finding
    from core.runlog import RunEvent, Series

# Listing runs (the command line's `runs`, the app's table) imports neither numpy nor
# the diagnostics: series, checkpoints and diagnosis import what they need when called.


class RunNotFound(LookupError):
    """No run matches what the user asked for."""


class Store:
    """A Headroom database, migrated to the current schema on open (SchemaError when a newer
    Headroom wrote it, StorageError when it cannot be reached)."""

    def __init__(self, url: str | None = None) -> None:
        self.url = normalize_url(url) if url else default_url()
        self.engine = open_engine(self.url)

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    @contextmanager
    def session(self) -> Iterator[Unit]:
        """One unit of work for :mod:`tracker.db`'s functions: it commits on success and rolls
        back on any error."""
        with unit_of_work(self.engine) as unit:
            yield unit

    def close(self) -> None:
        self.engine.dispose()

    # Reading

    def runs(self, run_ids: list[int] | None = None) -> list[RunSummary]:
        """Run summaries, each with its worst finding's severity (for the runs table)."""
        with self.session() as s:
            return run_store.summaries(s, run_ids, finding_store.severities(s, run_ids))

    def run_count(self) -> int:
        with self.session() as s:
            return run_store.count(s)

    def run(self, run_id: int) -> RunSummary:
        found = self.runs([run_id])
        if not found:
            raise RunNotFound(f"no run with id {run_id}")
        return found[0]

    def find_run(self, ref: str) -> RunSummary:
        """A run by id (ASCII digits) or by its exact name; never by a pattern.

        A name that matches no run exactly gets the runs whose names contain it
        as suggestions, not as an answer: ``%`` or ``_`` must never pick a run.
        """
        if ref.isascii() and ref.isdigit():
            run_id = int(ref)
            if run_id > 2**63 - 1:
                raise RunNotFound(f"no run with id {ref[:30]}")
            return self.run(run_id)
        with self.session() as s:
            ids = run_store.ids_named(s, ref)
            near = [] if ids or not ref.strip() else run_store.names_containing(s, ref, limit=4)
        if len(ids) == 1:
            return self.run(ids[0])
        if ids:
            raise RunNotFound(f"{len(ids)} runs are named {ref!r}; give the id (headroom runs)")
        hint = "; did you mean " + ", ".join(f"{n!r} (run {i})" for i, n in near) if near else ""
        raise RunNotFound(f"no run named {ref!r}{hint}")

    def series(self, run_id: int, name: str) -> Series:
        """A stored series with all its points (NaN and Inf as stored)."""
        from tracker.db import series as series_store

        with self.session() as s:
            found = series_store.read_named(s, run_id, name)
        if found is None:
            raise KeyError(f"run {run_id} has no series {name!r}")
        return found

    def series_infos(self, run_id: int) -> dict[str, SeriesInfo]:
        return self.run(run_id).series

    def events(self, run_id: int, kinds: Iterable[str] | None = None) -> list[RunEvent]:
        with self.session() as s:
            return run_store.events(s, run_id, kinds)

    def details(self, run_id: int) -> RunDetails:
        """The run's summary, config, stated figures, files and parts, in one transaction."""
        with self.session() as s:
            found = run_store.summaries(s, [run_id], finding_store.severities(s, [run_id]))
            if not found:
                raise RunNotFound(f"no run with id {run_id}")
            row = self._get(s, run_id)
            return RunDetails(found[0], dict(row.config), dict(row.summary),
                              run_store.sources(s, run_id), _parts(s, run_id))

    def checkpoints(self, run_id: int) -> list[Checkpoint]:
        """The run's checkpoints as last scanned, by step."""
        from tracker.db import checkpoints as checkpoint_store

        with self.session() as s:
            self._get(s, run_id)
            return checkpoint_store.load(s, run_id)

    # Diagnostics

    def findings(self, run_id: int) -> list[Finding]:
        """The run's findings as its last diagnosis left them, most severe first."""
        from tracker import diagnose as diagnostics

        with self.session() as s:
            self._get(s, run_id)
            return diagnostics.load(s, run_id)

    def severities(self, run_ids: Iterable[int] | None = None) -> dict[int, str]:
        """The worst finding severity of each run (runs without findings are absent)."""
        with self.session() as s:
            return finding_store.severities(s, run_ids)

    def diagnose(self, run_ids: Iterable[int] | None = None) -> dict[int, list[Finding]]:
        """Diagnose runs again (all by default), one transaction each; returns their findings."""
        from tracker import diagnose as diagnostics

        if run_ids is None:
            with self.session() as s:
                ids = run_store.ids(s)
        else:
            ids = list(run_ids)
        out = {}
        for run_id in ids:
            with self.session() as s:
                self._get(s, run_id)
                out[run_id] = diagnostics.diagnose_run(s, run_id, refresh_peers=run_ids is not None)
        return out

    # Editing

    def rename(self, run_id: int, name: str) -> None:
        self._update(run_id, name=name)

    def set_notes(self, run_id: int, notes: str) -> None:
        self._update(run_id, notes=notes)

    def set_tags(self, run_id: int, tags: Iterable[str]) -> None:
        wanted = {t.strip() for t in tags if t.strip()}
        with self.session() as s:
            self._get(s, run_id)
            run_store.set_tags(s, run_id, sorted(wanted))

    def set_shape_field(self, run_id: int, name: str, value) -> None:
        """Record the user's own value for a shape field (kept over re-ingests)."""
        if name not in RunShape.field_names():
            raise KeyError(f"unknown shape field {name!r}")
        with self.session() as s:
            shape = RunShape.from_dict(self._get(s, run_id).shape)
            if value is None:
                setattr(shape, name, None)
                shape.sources.pop(name, None)
            else:
                shape.set(name, value, USER_SOURCE)
            run_store.update(s, run_id, shape=shape.to_dict())

    def set_colour(self, run_id: int, colour: str) -> None:
        """The run's colour in every view, as the user chose it ("#rrggbb")."""
        self._update(run_id, colour=colour)

    def merge_runs(self, into: int, others: Iterable[int]) -> list[str]:
        """Make ``others`` parts of run ``into`` (one job), each in its own transaction.

        Returns what happened to each, in words. A GPU sampler's samples are placed
        on the run's steps; raises ValueError when one was not sampling during the run.
        """
        from tracker import jobs

        done = []
        for other in others:
            if other == into:
                continue
            with self.session() as s:
                done.append(jobs.merge(s, into, other))
                jobs.diagnose(s, into)
        return done

    def split_part(self, part_id: int) -> int:
        """Make a part of a job a run of its own again (never merged by ingest again).

        Its log is read again when it is still there, so the run gets its own shape,
        config and events back. Returns the new run's id.
        """
        from tracker import jobs
        from tracker.ingest import ingest

        with self.session() as s:
            job = jobs.job_of(s, part_id)
            run_id = jobs.split(s, part_id, run_store.new_colour(s))
            paths = [run_store.source_path(s, i) for i in (run_id, job)]
        # The job's own log too: a series the part held for both goes back to it.
        ingest(self, [p for p in paths if Path(p).exists()], refresh=True)
        return run_id

    def set_resumed_from(self, run_id: int, path: str | None) -> None:
        """The checkpoint this run resumed from (lineage), as the user states it; None clears it."""
        self._update(run_id, resumed_from=path)

    def set_exclude_from_fit(self, run_id: int, exclude: bool = True) -> None:
        """Keep a run out of the memory-model calibration (or let it back in)."""
        self._update(run_id, exclude_from_fit=exclude)

    def delete_runs(self, run_ids: Iterable[int]) -> int:
        """Remove runs and everything stored for them. The user's files are not touched."""
        with self.session() as s:
            return run_store.remove(s, run_ids)

    def _update(self, run_id: int, **values) -> None:
        with self.session() as s:
            if not run_store.update(s, run_id, **values):
                raise RunNotFound(f"no run with id {run_id}")

    @staticmethod
    def _get(unit: Unit, run_id: int) -> StoredRun:
        """The run's stored row (its fields read as attributes); RunNotFound when none."""
        run = run_store.get(unit, run_id)
        if run is None:
            raise RunNotFound(f"no run with id {run_id}")
        return run



def _parts(unit: Unit, run_id: int) -> list[PartInfo]:
    from tracker.db import jobs

    return [PartInfo(p.id, p.source_path, p.name, p.format, p.role, list(p.metrics),
                     list(p.duplicates), p.note, tuple(jobs.part_files(unit, p.id)))
            for p in jobs.parts(unit, run_id)]
