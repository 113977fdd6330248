"""From a log's stream of points to runs: restarts, resumes and repeated ranks.

A console log is one stream of ``(step, metrics)`` points, but it may hold a
run that was started again from scratch (a second run), a run resumed from a
checkpoint (the steps since that checkpoint are logged twice), and the same
line printed by several ranks. :class:`RunsBuilder` tells them apart by the
steps, with the process starts a dialect recognises as a hint:

- a step that goes back to or below the current run's first step starts a new
  run; one that goes back less is a **resume**, untangled as TensorBoard does
  (the later points replace the earlier ones at the same steps) and marked
  with a ``RunEvent("resume")`` by :func:`tracker.readers._restarts.untangle`;
- a point at the same step as the last one of its kind is a repeat from
  another rank and is dropped, except for peaks, where the larger is kept.

Points are kept in typed arrays (one step, position and wall-time array per
kind of line, one value array per metric), so memory grows with the numbers
logged, 8 bytes each, and not with the size of the text.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from datetime import datetime
from typing import Any

import numpy as np

from core.runlog import RunEvent, RunLog
from tracker.readers._restarts import Points, untangle

_RANK_SUFFIX = "/rank"
# Metrics whose repeats at one step keep the largest figure (memory peaks), not the first.
PEAK_PREFIX = "mem_"


class _Group:
    """Points logged together by one kind of line: shared steps, positions and wall times."""

    __slots__ = ("names", "steps", "positions", "walls", "columns")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.steps = array("q")
        self.positions = array("q")
        self.walls = array("d")
        self.columns = [array("d") for _ in names]

    def add(self, step: int, position: int, values: tuple[float, ...], wall: float | None,
            peak: bool) -> None:
        if self.steps and self.steps[-1] == step:
            if peak:  # another rank's figure for the same step: keep the larger
                for column, value in zip(self.columns, values, strict=True):
                    if value > column[-1] or math.isnan(column[-1]):
                        column[-1] = value
            return
        self.steps.append(step)
        self.positions.append(position)
        self.walls.append(math.nan if wall is None else wall)
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def points(self) -> dict[str, Points]:
        steps = np.frombuffer(self.steps, dtype=np.int64)
        positions = np.frombuffer(self.positions, dtype=np.int64)
        walls = np.frombuffer(self.walls, dtype=np.float64)
        return {name: Points(steps, np.frombuffer(column, dtype=np.float64), walls, positions)
                for name, column in zip(self.names, self.columns, strict=True)}


class _Segment:
    """One run being built: its points and what the log said about it."""

    def __init__(self, fmt: str, name: str) -> None:
        self.run = RunLog(format=fmt, name=name)
        self.groups: dict[tuple[str, ...], _Group] = {}
        self.first: int | None = None
        self.last: int | None = None  # the most recent step (after a resume, below the highest)
        self.first_wall: float | None = None
        self.deferred: list[tuple[dict[str, float], float | None, bool]] = []
        self.event_keys: set[Any] = set()
        self.count = 0

    def add(self, step: int, metrics: dict[str, float], wall: float | None, peak: bool) -> None:
        if self.first is None:
            self.first = step
            self.flush_deferred(max(step - 1, 0))
        names = tuple(metrics)
        group = self.groups.get(names)
        if group is None:
            group = self.groups[names] = _Group(names)
        group.add(step, self.count, tuple(metrics.values()), wall, peak)
        self.count += 1
        self.last = step
        if self.first_wall is None and wall is not None:
            self.first_wall = wall

    def flush_deferred(self, step: int) -> None:
        """Place points logged before any step (start-up memory reports) just before ``step``."""
        deferred, self.deferred = self.deferred, []
        for metrics, wall, peak in deferred:
            self.add(step, metrics, wall, peak)

    def absorb(self, other: _Segment) -> None:
        """Take in what a restarted process logged before its first step."""
        run, new = self.run, other.run
        run.config.update(new.config)
        run.summary.update(new.summary)
        for name, value in new.shape.known().items():
            run.shape.set(name, value, new.shape.sources.get(name, "log"))
        run.warnings.extend(new.warnings)
        for event in new.events:
            self.add_event(event, (event.kind, event.step, event.message))
        self.deferred.extend(other.deferred)

    def add_event(self, event: RunEvent, key: Any) -> None:
        if key not in self.event_keys:
            self.event_keys.add(key)
            self.run.events.append(event)

    def has_content(self) -> bool:
        return self.first is not None or bool(self.deferred or self.run.events)

    def build(self) -> RunLog:
        if self.deferred:
            self.flush_deferred(self.last if self.last is not None else 0)
        run = self.run
        columns, resumes, warnings = untangle(_columns(self.groups))
        run.warnings.extend(warnings)
        for event in resumes:
            self.add_event(event, ("resume", event.step))
        for name, points in columns.items():
            steps, values, walls = _in_step_order(name, points)
            run.add_series(name, steps, values, walls if np.isfinite(walls).all() else None)
        _drop_single_rank(run)
        run.events.sort(key=lambda e: (e.step is None, e.step or 0))
        if self.first_wall is not None and run.started is None:
            run.started = datetime.fromtimestamp(self.first_wall)
        return run


def _columns(groups: dict[tuple[str, ...], _Group]) -> dict[str, Points]:
    """Each metric's points from every kind of line it appeared in, in the order written."""
    parts: dict[str, list[Points]] = defaultdict(list)
    for group in groups.values():
        if group.steps:
            for name, points in group.points().items():
                parts[name].append(points)
    columns = {}
    for name, chunks in parts.items():
        if len(chunks) == 1:
            columns[name] = chunks[0]
            continue
        merged = Points(*(np.concatenate(c) for c in zip(
            *((p.steps, p.values, p.wall_time, p.positions) for p in chunks), strict=True)))
        columns[name] = merged.take(np.argsort(merged.positions, kind="stable"))
    return columns


def _in_step_order(name: str, points: Points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted by step, one point per step: the first written, or the largest for memory."""
    steps, values, walls = points.steps, points.values, points.wall_time
    if len(steps) > 1 and (steps[1:] <= steps[:-1]).any():
        order = np.argsort(steps, kind="stable")
        steps, values, walls = steps[order], values[order], walls[order]
        first = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
        if name.startswith(PEAK_PREFIX):
            values = np.fmax.reduceat(values, first)
        else:
            values = values[first]
        steps, walls = steps[first], walls[first]
    return steps, values, walls


def _drop_single_rank(run: RunLog) -> None:
    """Per-rank copies add nothing when only one rank reported."""
    ranks: dict[str, list[str]] = defaultdict(list)
    for name in run.series:
        base, sep, _ = name.rpartition(_RANK_SUFFIX)
        if sep:
            ranks[base].append(name)
    for names in ranks.values():
        if len(names) == 1:
            del run.series[names[0]]


class RunsBuilder:
    """Collects a log's points, events and facts, and splits them into runs.

    Dialect handlers write facts (config, shape, summary) into :attr:`run`,
    which is the run being logged at that moment.
    """

    def __init__(self, fmt: str, name: str) -> None:
        self._fmt, self._name = fmt, name
        self._segments = [_Segment(fmt, name)]
        self._pending: _Segment | None = None

    @property
    def run(self) -> RunLog:
        return (self._pending or self._segments[-1]).run

    @property
    def step(self) -> int | None:
        """The last step logged by the run being logged now (None before its first)."""
        return (self._pending or self._segments[-1]).last

    def restart(self) -> None:
        """A dialect saw a process start (an arguments dump, a "resuming" line).

        What follows belongs to a new process; whether that is a new run or a
        resume of the current one is decided by its first step.
        """
        if self._pending is None and self._segments[-1].first is not None:
            self._pending = _Segment(self._fmt, self._name)

    def point(self, step: int | None, metrics: dict[str, float], wall: float | None = None,
              *, peak: bool = False) -> None:
        """Record metrics at ``step``; None means "now" (the last step logged, or before the first).

        ``peak`` marks figures where another rank's copy at the same step is
        kept when larger (memory peaks), rather than dropped as a repeat.
        """
        if not metrics:
            return
        if step is None:
            segment = self._pending or self._segments[-1]
            if segment.first is None:
                segment.deferred.append((metrics, wall, peak))
                return
            step = segment.last
        else:
            segment = self._segment_for(step)
        segment.add(step, metrics, wall, peak)

    def event(self, kind: str, message: str, data: dict[str, Any] | None = None,
              step: int | None = None, wall: float | None = None, key: Any = None) -> None:
        """Record an event once: a repeat with the same ``key`` (default: message) is dropped."""
        segment = self._pending or self._segments[-1]
        step = segment.last if step is None else step
        event = RunEvent(kind, step, message, data or {}, wall)
        segment.add_event(event, (kind, step, key if key is not None else message))

    def note_scope(self, metric: str, scope: str) -> None:
        """Say in the config whether a memory metric's peaks are cumulative or per interval."""
        scopes = self.run.config.setdefault("memory_peaks", {})
        known = scopes.get(metric)
        if known is None:
            scopes[metric] = scope
        elif scope not in known.split(" + "):
            scopes[metric] = f"{known} + {scope}"

    def finish(self) -> list[RunLog]:
        """The runs found, each with a distinct key ("1", "2", ...) in log order."""
        if self._pending is not None:
            self._close_pending(self._pending)
        runs = [s.build() for s in self._segments if s.has_content()]
        for index, run in enumerate(runs, start=1):
            run.key = str(index)
            if index > 1:
                run.name = f"{self._name} #{index}"
        return runs

    def _segment_for(self, step: int) -> _Segment:
        current = self._segments[-1]
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return self._settle(step, pending)
        if current.last is not None and step < current.last:
            return self._settle(step, None)
        return current

    def _settle(self, step: int, incoming: _Segment | None) -> _Segment:
        """Where a restarted process's first point goes: a new run, or on with this one."""
        current = self._segments[-1]
        if current.first is not None and step <= current.first:  # counting started over
            segment = incoming or _Segment(self._fmt, self._name)
            self._segments.append(segment)
            return segment
        if incoming is not None:
            if current.last is not None and step > current.last:  # resumed where the log ended
                message = f"resumed at step {step} after reaching step {current.last}"
                data = {"from_step": current.last, "dropped_points": 0, "metrics": []}
                current.add_event(RunEvent("resume", step, message, data), ("resume", step))
            current.absorb(incoming)
            current.flush_deferred(max(step - 1, 0))
        return current  # a step back here is untangled when the run is built

    def _close_pending(self, pending: _Segment) -> None:
        """A process that started but logged no step: a run of its own if its shape differs.

        Otherwise what it logged (a crash at start-up, say) belongs to the last run.
        """
        self._pending = None
        if not pending.has_content():
            return
        current = self._segments[-1]
        own = pending.run.shape.known()
        theirs = current.run.shape.known()
        if own and any(theirs.get(name) != value for name, value in own.items()):
            self._segments.append(pending)
        else:
            current.absorb(pending)
