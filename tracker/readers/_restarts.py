"""Steps that go back: a run resumed from a checkpoint.

TensorBoard's rule: when a series goes back to step ``s``, the points it logged
earlier at steps >= ``s`` belong to an abandoned timeline and the new ones
replace them. Headroom shows the same untangled curve, but records each resume
as a ``RunEvent("resume")`` (the "loss rebounds after resume" diagnostic reads
them) instead of dropping points silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.runlog import RunEvent

# More step-backs than this in one series is a counter that resets (say, per
# epoch), not a run resumed that often: such a series is kept as written.
MAX_RESTARTS = 50


@dataclass
class Points:
    """One metric's points in the order they were written.

    ``positions`` place the points in the file (record or row number), so a
    resume seen in one metric can also untangle the metrics logged beside it.
    """

    steps: np.ndarray
    values: np.ndarray
    wall_time: np.ndarray | None = None
    positions: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.positions is None:
            self.positions = np.arange(len(self.steps))

    def take(self, keep: np.ndarray) -> Points:
        wall = None if self.wall_time is None else self.wall_time[keep]
        return Points(self.steps[keep], self.values[keep], wall, self.positions[keep])


@dataclass(frozen=True)
class Back:
    """A place where one metric's step goes back: to ``step``, from ``from_step``."""

    step: int
    position: int
    from_step: int
    wall: float | None


class Backs:
    """Where one metric's step goes back, gathered a run of points at a time (a reader
    that streams a log sees each metric in pieces)."""

    def __init__(self) -> None:
        self.count = 0
        self.found: list[Back] = []  # kept while few enough to be resumes
        self._last: int | None = None

    def add(self, points: Points) -> None:
        steps = points.steps
        if not len(steps):
            return
        before = steps[0] if self._last is None else self._last
        previous = np.concatenate(([before], steps[:-1]))
        backs = np.flatnonzero(steps < previous)
        self.count += len(backs)
        if self.count > MAX_RESTARTS:
            self.found = []  # a counter that resets: only the count matters
        else:
            self.found.extend(_back(points, int(i), int(previous[i])) for i in backs)
        self._last = int(steps[-1])


def _back(points: Points, index: int, from_step: int) -> Back:
    wall = None if points.wall_time is None else float(points.wall_time[index])
    return Back(int(points.steps[index]), int(points.positions[index]), from_step, wall)


@dataclass
class Rewind:
    """Where the log's step went back (a resume, written out as a "resume" event): the step,
    the first position after it, the metrics it touched."""

    step: int
    position: int
    from_step: int
    wall: float | None
    metrics: list[str]
    dropped: int = 0


def untangle(columns: dict[str, Points]) -> tuple[dict[str, Points], list[RunEvent], list[str]]:
    """Drop orphaned points from every series; returns the series, resume events, warnings.

    A resume is seen where some metric's step goes back; every metric then
    loses the points written before that position at steps >= the resumed one.
    """
    backs = {}
    for name, points in columns.items():
        backs[name] = Backs()
        backs[name].add(points)
    resumes, counters, warnings = find_resumes(backs)
    if not resumes:
        return columns, [], warnings
    out = {name: points if name in counters else drop_orphans(points, resumes)
           for name, points in columns.items()}
    return out, events(resumes), warnings


def find_resumes(backs: dict[str, Backs]) -> tuple[list[Rewind], set[str], list[str]]:
    """The resumes the metrics' step-backs show (metrics in the order given), the metrics
    whose step resets too often to be resumed (kept as written), and a warning for each."""
    warnings = []
    resumes: list[Rewind] = []
    counters = set()
    for name, found in backs.items():
        if found.count > MAX_RESTARTS:
            warnings.append(f"{name!r}: the step goes back {found.count} times; "
                            "kept every point as written (a step counter that resets?)")
            counters.add(name)
        else:
            for back in found.found:
                _note(resumes, name, back)
    return resumes, counters, warnings


def _note(resumes: list[Rewind], name: str, back: Back) -> None:
    """Add one metric's step-back to the resume it belongs to, or start a new one.

    Metrics logged together go back to the same step; a metric that goes back
    to that step a second time means the run resumed from it twice.
    """
    for resume in resumes:
        if resume.step == back.step and name not in resume.metrics:
            resume.metrics.append(name)
            resume.position = min(resume.position, back.position)
            resume.from_step = max(resume.from_step, back.from_step)
            return
    resumes.append(Rewind(back.step, back.position, back.from_step, back.wall, [name]))


def drop_orphans(points: Points, resumes: list[Rewind]) -> Points:
    """``points`` without those a resume replaced (a run of a metric's points at a time works:
    each resume counts what it dropped)."""
    keep = np.ones(len(points.steps), dtype=bool)
    for resume in sorted(resumes, key=lambda r: r.position):
        orphan = keep & (points.positions < resume.position) & (points.steps >= resume.step)
        resume.dropped += int(orphan.sum())
        keep &= ~orphan
    return points if keep.all() else points.take(keep)


def events(resumes: list[Rewind]) -> list[RunEvent]:
    return [_event(r) for r in resumes]


def _event(resume: Rewind) -> RunEvent:
    message = (f"resumed at step {resume.step} after reaching step {resume.from_step}; "
               f"{resume.dropped} points logged at steps >= {resume.step} before the resume "
               "were replaced")
    data = {"from_step": resume.from_step, "dropped_points": resume.dropped,
            "metrics": sorted(resume.metrics)}
    return RunEvent("resume", resume.step, message, data, resume.wall)
