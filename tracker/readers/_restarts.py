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


@dataclass
class _Resume:
    """Where the run went back: the step, the first position after it, what it touched."""

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
    warnings = []
    resumes: list[_Resume] = []
    counters = set()
    for name, points in columns.items():
        backs = np.flatnonzero(points.steps[1:] < points.steps[:-1]) + 1
        if len(backs) > MAX_RESTARTS:
            warnings.append(f"{name!r}: the step goes back {len(backs)} times; "
                            "kept every point as written (a step counter that resets?)")
            counters.add(name)
        else:
            for index in backs:
                _note(resumes, name, points, int(index))
    if not resumes:
        return columns, [], warnings
    out = {name: points if name in counters else _drop_orphans(points, resumes)
           for name, points in columns.items()}
    return out, [_event(r) for r in resumes], warnings


def _note(resumes: list[_Resume], name: str, points: Points, index: int) -> None:
    """Add one metric's step-back to the resume it belongs to, or start a new one.

    Metrics logged together go back to the same step; a metric that goes back
    to that step a second time means the run resumed from it twice.
    """
    step, position = int(points.steps[index]), int(points.positions[index])
    wall = None if points.wall_time is None else float(points.wall_time[index])
    for resume in resumes:
        if resume.step == step and name not in resume.metrics:
            resume.metrics.append(name)
            resume.position = min(resume.position, position)
            resume.from_step = max(resume.from_step, int(points.steps[index - 1]))
            return
    resumes.append(_Resume(step, position, int(points.steps[index - 1]), wall, [name]))


def _drop_orphans(points: Points, resumes: list[_Resume]) -> Points:
    keep = np.ones(len(points.steps), dtype=bool)
    for resume in sorted(resumes, key=lambda r: r.position):
        orphan = keep & (points.positions < resume.position) & (points.steps >= resume.step)
        resume.dropped += int(orphan.sum())
        keep &= ~orphan
    return points if keep.all() else points.take(keep)


def _event(resume: _Resume) -> RunEvent:
    message = (f"resumed at step {resume.step} after reaching step {resume.from_step}; "
               f"{resume.dropped} points logged at steps >= {resume.step} before the resume "
               "were replaced")
    data = {"from_step": resume.from_step, "dropped_points": resume.dropped,
            "metrics": sorted(resume.metrics)}
    return RunEvent("resume", resume.step, message, data, resume.wall)
