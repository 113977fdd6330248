"""A run is a job: logs of one training join one run, at ingest or by the user's hand.

After a new run is stored, :func:`join` looks for the job it belongs to (see
``core.jobs`` for the rules): a GPU sampler joins the run in its folder or the run
whose time it overlaps, as system metrics placed on the run's steps; a second
logger joins the run whose loss curve it repeats; a training run takes in the
samplers already stored beside it. Each move happens in the file's own ingest
transaction. :func:`merge` and :func:`split` are the user's own corrections.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.jobs import Clock, Placement, copy_to_keep, logger_kinds, overlap, place, same_curve
from core.runlog import RunLog, Series
from tracker.db import jobs as parts_store
from tracker.db import runs as run_store
from tracker.db.jobs import LOGGER, SYSTEM
from tracker.db.unit import Unit
from tracker.model import SourceStat, StoredPart, StoredRun

SAMPLER = "gpu_sampler"
# A sampler's folder holds the run's log at most this many folders down.
SAMPLER_DEPTH = 2


@dataclass(frozen=True)
class Joined:
    """What :func:`join` did with a new run: the run it joined, or the runs it took in."""

    run_id: int  # the job's run: the new run's own id when it joined nothing
    run_name: str
    note: str = ""
    absorbed: tuple[int, ...] = ()  # stored runs the new run took in (their ids are gone)


def join(unit: Unit, run_id: int) -> Joined:
    """Join the freshly stored run ``run_id`` to its job, if it has one."""
    run = run_store.get(unit, run_id)
    if run.format == SAMPLER:
        return _sampler_joins(unit, run)
    twin = _logger_twin(unit, run)
    if twin is not None:
        part = parts_store.merge(unit, twin.id, run.id, LOGGER, copy_to_keep)
        return Joined(twin.id, twin.name, f"joined run {twin.id} ({twin.name}): another log of "
                      f"the same training, its loss curve identical" + _duplicates(part))
    taken = [s for s in _samplers_beside(unit, run) if _take_sampler(unit, run, s)]
    note = (f"took in the GPU sampler log{'s' * (len(taken) > 1)} "
            + ", ".join(Path(s.source_path).name for s in taken)) if taken else ""
    return Joined(run.id, run.name, note, tuple(s.id for s in taken))


def merge(unit: Unit, into: int, other: int) -> str:
    """Make run ``other`` part of run ``into`` (the user's choice); returns what was done."""
    target, source = run_store.get(unit, into), run_store.get(unit, other)
    if target is None or source is None:
        raise LookupError(f"no run with id {other if target else into}")
    if source.format == SAMPLER:
        placement = _placement(unit, target, source)
        if placement is None:
            raise ValueError(f"{source.name} was not sampling while {target.name} ran")
        parts_store.merge(unit, into, other, SYSTEM, copy_to_keep, placement.series,
                          placement.note)
        return f"{source.name} joined {target.name} as its GPU metrics"
    part = parts_store.merge(unit, into, other, LOGGER, copy_to_keep)
    return f"{source.name} joined {target.name}" + _duplicates(part)


def update_part(unit: Unit, part: StoredPart, log: RunLog, sources: list[SourceStat],
                content_key: str) -> int:
    """A part's log read again (it grew): its series, files and events in the job's run."""
    if part.role == SYSTEM:
        run = run_store.get(unit, part.run_id)
        placement = _place_log(unit, run, log.series, exclude=part.metrics)
        series = placement.series if placement is not None else {}
    else:
        series = log.series
    named = _part_names(unit, part, series, log.format)
    points = run_store.save_series(unit, part.run_id, RunLog(log.format, log.name, named))
    parts_store.record_read(unit, part, sorted(set(part.metrics) | set(named)), content_key)
    run_store.save_sources(unit, part.run_id, sources, part.id)
    run_store.save_events(unit, part.run_id, log.events, part.source_key)
    run_store.save_checkpoint_refs(unit, part.run_id, log)
    diagnose(unit, part.run_id)
    return points


def _part_names(unit: Unit, part: StoredPart, series: dict[str, Series],
                fmt: str) -> dict[str, Series]:
    """The part's series under the names the job's run keeps them by (duplicates left out)."""
    others = parts_store.series_names(unit, part.run_id) - set(part.metrics)
    out = {}
    for name, s in series.items():
        if name in part.duplicates:
            continue
        s.name = name if name in part.metrics or name not in others else f"{name}@{fmt}"
        out[s.name] = s
    return out


def diagnose(unit: Unit, run_id: int) -> None:
    """Diagnose a job's run again from the store (its series come from several logs)."""
    from tracker.diagnose import diagnose_run

    diagnose_run(unit, run_id)


def diagnose_if_joined(unit: Unit, run_id: int) -> None:
    """After the run's own log grew: diagnose again with its parts' series, if it has parts."""
    if parts_store.parts(unit, run_id):
        diagnose(unit, run_id)


def job_of(unit: Unit, part_id: int) -> int:
    """The run a part belongs to."""
    part = parts_store.part(unit, part_id)
    if part is None:
        raise LookupError(f"no part {part_id}")
    return part.run_id


def split(unit: Unit, part_id: int, colour: str | None = None) -> int:
    """Make a part of a job a run of its own, never merged again by ingest; returns its id.

    Both runs are diagnosed again: each lost or gained series.
    """
    job = job_of(unit, part_id)
    run_id = parts_store.split(unit, part_id, colour)
    diagnose(unit, job)
    diagnose(unit, run_id)
    return run_id


# ---- GPU samplers


def _sampler_joins(unit: Unit, sampler: StoredRun) -> Joined:
    for target in _runs_for_sampler(unit, sampler):
        placement = _placement(unit, target, sampler)
        if placement is not None:
            parts_store.merge(unit, target.id, sampler.id, SYSTEM, copy_to_keep,
                              placement.series, placement.note)
            return Joined(target.id, target.name,
                          f"joined run {target.id} ({target.name}) as its GPU metrics: "
                          + placement.note)
    return Joined(sampler.id, sampler.name)


def _runs_for_sampler(unit: Unit, sampler: StoredRun) -> list[StoredRun]:
    """Training runs the sampler may have watched: the nearest ones in its folder, then those
    whose time it overlaps."""
    folder = os.path.dirname(sampler.source_path)
    near = [r for r in parts_store.runs_under(unit, folder, exclude=[SAMPLER])
            if not r.kept_apart and _depth(folder, r.source_path) <= SAMPLER_DEPTH]
    if near:
        nearest = min(_depth(folder, r.source_path) for r in near)
        closest = [r for r in near if _depth(folder, r.source_path) == nearest]
        return closest if len(closest) == 1 else _by_overlap(unit, sampler, closest)
    span = _sampler_span(unit, sampler)
    if span is None:
        return []
    from datetime import UTC, datetime

    start, end = (datetime.fromtimestamp(t, UTC) for t in span)
    return _by_overlap(unit, sampler, parts_store.runs_started_between(
        unit, start, end, exclude=[SAMPLER]))


def _by_overlap(unit: Unit, sampler: StoredRun, runs: list[StoredRun]) -> list[StoredRun]:
    """Runs with a wall clock that overlaps the sampler's time, the most overlapping first."""
    span = _sampler_span(unit, sampler)
    scored = []
    for run in runs:
        clock = Clock.of(parts_store.timed_series(unit, run.id))
        if span is not None and clock is not None and clock.absolute:
            shared = overlap(span, clock.span())
            if shared > 0:
                scored.append((shared, run))
    return [run for _, run in sorted(scored, key=lambda pair: -pair[0])]


def _sampler_span(unit: Unit, sampler: StoredRun) -> tuple[float, float] | None:
    memory = parts_store.read_series(unit, sampler.id, ["mem_used_gib"]).get("mem_used_gib")
    if memory is None or memory.wall_time is None or not len(memory):
        return None
    return float(memory.wall_time[0]), float(memory.wall_time[-1])


def _samplers_beside(unit: Unit, run: StoredRun) -> list[StoredRun]:
    """Standalone sampler runs whose folder holds this run's log, and no other run's."""
    found = []
    folder = Path(_where(run.source_path))
    for _ in range(SAMPLER_DEPTH + 1):
        for sampler in parts_store.runs_under(unit, str(folder), formats=[SAMPLER]):
            if (not sampler.kept_apart and os.path.dirname(sampler.source_path) == str(folder)
                    and _runs_for_sampler(unit, sampler)[:1] == [run]):
                found.append(sampler)
        folder = folder.parent
    return found


def _take_sampler(unit: Unit, run: StoredRun, sampler: StoredRun) -> bool:
    placement = _placement(unit, run, sampler)
    if placement is None:
        return False
    parts_store.merge(unit, run.id, sampler.id, SYSTEM, copy_to_keep, placement.series,
                      placement.note)
    return True


def _placement(unit: Unit, run: StoredRun, sampler: StoredRun) -> Placement | None:
    """The sampler's series placed on the run's steps, or None when they cannot be."""
    return _place_log(unit, run, parts_store.read_series(unit, sampler.id))


def _place_log(unit: Unit, run: StoredRun, samples: dict[str, Series],
               exclude: list[str] = ()) -> Placement | None:
    own = parts_store.timed_series(unit, run.id, exclude=exclude)
    steps = parts_store.step_range(unit, run.id, exclude=exclude)
    if steps is None:
        return None
    return place(samples, Clock.of(own), steps)


# ---- Second loggers


def _logger_twin(unit: Unit, run: StoredRun) -> StoredRun | None:
    """The stored run this one's loss curve repeats, written by another kind of logger."""
    candidates = parts_store.loss_matches(unit, run.id)
    if not candidates:
        return None
    files = parts_store.files_by_run(unit, [run.id, *candidates])
    kinds = logger_kinds(files.get(run.id, []))
    mine = None
    for other_id in candidates:
        if kinds & logger_kinds(files.get(other_id, [])):
            continue  # one kind of logger wrote both: two runs of one deterministic script
        if mine is None:  # read only once a twin by another logger is possible
            mine = parts_store.read_series(unit, run.id, ["loss"])["loss"]
        if same_curve(mine, parts_store.read_series(unit, other_id, ["loss"])["loss"]):
            return run_store.get(unit, other_id)
    return None


def _duplicates(part) -> str:
    if not part.duplicates:
        return ""
    return f"; kept once: {', '.join(part.duplicates)}"


def _depth(folder: str, path: str) -> int:
    """How many folders below ``folder`` a run's log lies (0: in it)."""
    relative = os.path.relpath(_where(path), folder)
    return 0 if relative == "." else len(Path(relative).parts)


def _where(path: str) -> str:
    """The folder a run's log is in: the run folder itself, or a log file's folder."""
    return path if os.path.isdir(path) else os.path.dirname(path)
