"""The tracker's public face over the database: open it, list runs, read series, edit.

The desktop app and the command line call only this (and :mod:`tracker.ingest`);
the tables stay an implementation detail of :mod:`tracker.db`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.shape import RunShape
from tracker.db import findings as finding_store
from tracker.db import runs as run_store
from tracker.db.engine import default_url, display_url, make_engine, normalize_url, upgrade
from tracker.db.runs import USER_SOURCE
from tracker.db.schema import EventRow, Run, RunTag, SeriesRow, SourceFile
from tracker.model import PartInfo, RunSummary, SeriesInfo, SourceStat

if TYPE_CHECKING:
    from core.checkpoints import Checkpoint
    from core.diagnostics import Finding
    from core.runlog import RunEvent, Series

# Listing runs (the command line's `runs`, the app's table) imports neither numpy nor
# the diagnostics: series, checkpoints and diagnosis import what they need when called.


class RunNotFound(LookupError):
    """No run matches what the user asked for."""


class Store:
    """A Headroom database, migrated to the current schema on open."""

    def __init__(self, url: str | None = None) -> None:
        self.url = normalize_url(url) if url else default_url()
        self.engine = make_engine(self.url)
        upgrade(self.engine)

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose work commits on success and rolls back on any error."""
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    def close(self) -> None:
        self.engine.dispose()

    # Reading

    def runs(self, run_ids: list[int] | None = None) -> list[RunSummary]:
        """Run summaries, each with its worst finding's severity (for the runs table)."""
        with self.session() as s:
            return run_store.summaries(s, run_ids, finding_store.severities(s, run_ids))

    def run_count(self) -> int:
        from sqlalchemy import func

        with self.session() as s:
            return s.execute(select(func.count(Run.id))).scalar_one()

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
            ids = s.execute(select(Run.id).where(Run.name == ref)).scalars().all()
            near = [] if ids or not ref.strip() else s.execute(
                select(Run.id, Run.name).where(Run.name.contains(ref, autoescape=True))
                .order_by(Run.id).limit(4)).all()
        if len(ids) == 1:
            return self.run(ids[0])
        if ids:
            raise RunNotFound(f"{len(ids)} runs are named {ref!r}; give the id (headroom runs)")
        hint = "; did you mean " + ", ".join(f"{n!r} (run {i})" for i, n in near) if near else ""
        raise RunNotFound(f"no run named {ref!r}{hint}")

    def series(self, run_id: int, name: str) -> Series:
        """A stored series with all its points (NaN and Inf as stored)."""
        from core.runlog import Series
        from tracker.db import series as series_store

        with self.session() as s:
            row = s.execute(
                select(SeriesRow).where(SeriesRow.run_id == run_id, SeriesRow.name == name)
            ).scalar_one_or_none()
            if row is None:
                raise KeyError(f"run {run_id} has no series {name!r}")
            steps, values, walls = series_store.read(s, row.id)
        return Series(name, steps, values, row.original_name, walls)

    def series_infos(self, run_id: int) -> dict[str, SeriesInfo]:
        return self.run(run_id).series

    def events(self, run_id: int, kinds: Iterable[str] | None = None) -> list[RunEvent]:
        from core.runlog import RunEvent

        query = select(EventRow).where(EventRow.run_id == run_id).order_by(EventRow.id)
        if kinds is not None:
            query = query.where(EventRow.kind.in_(list(kinds)))
        with self.session() as s:
            rows = s.execute(query).scalars().all()
        return [RunEvent(r.kind, r.step, r.message, dict(r.data), r.wall_time) for r in rows]

    def config(self, run_id: int) -> dict:
        with self.session() as s:
            return dict(self._get(s, run_id).config)

    def final_values(self, run_id: int) -> dict:
        """Figures the log states once for the whole run (train_runtime, total_flos...)."""
        with self.session() as s:
            return dict(self._get(s, run_id).summary)

    def sources(self, run_id: int) -> list[SourceStat]:
        """The files the run was read from, as they were when last read."""
        with self.session() as s:
            self._get(s, run_id)
            rows = s.execute(
                select(SourceFile).where(SourceFile.run_id == run_id).order_by(SourceFile.path)
            ).scalars()
            return [SourceStat(r.path, r.size, r.mtime, r.sha256) for r in rows]

    def parts(self, run_id: int) -> list[PartInfo]:
        """The logs that joined this run as parts of its job (other loggers, GPU samplers)."""
        from tracker.db import jobs

        with self.session() as s:
            self._get(s, run_id)
            return [PartInfo(p.id, p.source_path, p.name, p.format, p.role, list(p.metrics),
                             list(p.duplicates), p.note, tuple(jobs.part_files(s, p.id)))
                    for p in jobs.parts(s, run_id)]

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
                ids = list(s.execute(select(Run.id).order_by(Run.id)).scalars())
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
        with self.session() as s:
            self._get(s, run_id).name = name

    def set_notes(self, run_id: int, notes: str) -> None:
        with self.session() as s:
            self._get(s, run_id).notes = notes

    def set_tags(self, run_id: int, tags: Iterable[str]) -> None:
        wanted = {t.strip() for t in tags if t.strip()}
        with self.session() as s:
            self._get(s, run_id)
            s.execute(delete(RunTag).where(RunTag.run_id == run_id))
            s.add_all(RunTag(run_id=run_id, tag=t) for t in sorted(wanted))

    def set_shape_field(self, run_id: int, name: str, value) -> None:
        """Record the user's own value for a shape field (kept over re-ingests)."""
        if name not in RunShape.field_names():
            raise KeyError(f"unknown shape field {name!r}")
        with self.session() as s:
            run = self._get(s, run_id)
            shape = RunShape.from_dict(run.shape)
            if value is None:
                setattr(shape, name, None)
                shape.sources.pop(name, None)
            else:
                shape.set(name, value, USER_SOURCE)
            run.shape = shape.to_dict()

    def set_colour(self, run_id: int, colour: str) -> None:
        """The run's colour in every view, as the user chose it ("#rrggbb")."""
        with self.session() as s:
            self._get(s, run_id).colour = colour

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
        from tracker.db import runs as run_store
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
        with self.session() as s:
            self._get(s, run_id).resumed_from = path

    def set_exclude_from_fit(self, run_id: int, exclude: bool = True) -> None:
        """Keep a run out of the memory-model calibration (or let it back in)."""
        with self.session() as s:
            self._get(s, run_id).exclude_from_fit = exclude

    def delete_runs(self, run_ids: Iterable[int]) -> int:
        """Remove runs and everything stored for them. The user's files are not touched."""
        ids = list(run_ids)
        with self.session() as s:
            return s.execute(delete(Run).where(Run.id.in_(ids))).rowcount

    @staticmethod
    def _get(session: Session, run_id: int) -> Run:
        run = session.get(Run, run_id)
        if run is None:
            raise RunNotFound(f"no run with id {run_id}")
        return run

