"""Where a run was resumed, and where its learning rate jumped up.

Resume points come from the log when it says so (a "resume" event), from the
steps themselves (they go back, or the run starts far from step 0), and from
the LR: an LR that jumps back up right after a checkpoint step is the
signature of a resume without scheduler state, which trainer_state.json
does not otherwise record. The resume and LR-schedule rules share these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.diagnostics._stats import finite, step_interval
from core.diagnostics.finding import RunData
from core.runlog import Series

JUMP = 1.5  # an LR this many times its previous logged value has jumped
LATE_START = 20  # a run whose first step is this many logging intervals in continues another
NEAR = 2  # an LR jump within this many logging intervals after a resume belongs to it
CYCLIC = ("restart", "cycl")  # scheduler names whose LR rises on purpose


@dataclass(frozen=True)
class LrJump:
    """The LR rose after its warm-up had ended."""

    step: int  # first logged step at the higher LR
    since: int  # last logged step before the change (before the drop, when a new warm-up began)
    before: float
    after: float
    climb: int  # logged points the LR kept rising after the jump (a warm-up restarting)


@dataclass(frozen=True)
class ResumeBoundary:
    """A resume boundary: ``step`` is the first step of the resumed part."""

    step: int
    how: str  # what showed it, in words
    checkpoint: str | None = None  # path of the checkpoint resumed from, when the log names it


def lr_jumps(run: RunData) -> list[LrJump]:
    """Rises of the LR by ``JUMP``× or more between logged points, after the warm-up."""
    lr = run.get("lr")
    if lr is None or _cyclic(run):
        return []
    steps, values = finite(lr)
    falling = np.flatnonzero(values[1:] <= values[:-1])
    if not len(falling):
        return []  # still warming up: every rise is the warm-up
    rises = np.flatnonzero((values[:-1] > 0) & (values[1:] >= JUMP * values[:-1]))
    if len(rises) > max(50, len(values) // 100):
        return []  # rising this often is a cyclic policy or noise, not a schedule that jumped
    jumps: list[LrJump] = []
    top = 0  # index where the last jump's climb ended: rises before it belong to that jump
    for i in rises[rises > falling[0]]:
        if i < top:
            continue
        climb = _climb(values, i + 1)
        top = i + 1 + climb
        dropped = values[i] * JUMP <= values[i - 1]  # fell first: a warm-up from low again
        jumps.append(LrJump(int(steps[i + 1]), int(steps[i - 1] if dropped else steps[i]),
                            float(values[i]), float(values[i + 1]), climb))
    return jumps


def _climb(values: np.ndarray, start: int) -> int:
    """How many points after ``start`` the values keep rising."""
    n = 0
    while start + n + 1 < len(values) and values[start + n + 1] > values[start + n]:
        n += 1
    return n


def _cyclic(run: RunData) -> bool:
    name = str(run.config.get("lr_scheduler_type", "")).lower()
    return any(word in name for word in CYCLIC)


def resume_points(run: RunData) -> list[ResumeBoundary]:
    """Every resume boundary the run shows, in step order, one per step."""
    found = {r.step: r for r in _from_lr(run)}
    found.update((r.step, r) for r in _from_steps(run))
    found.update((r.step, r) for r in _from_events(run))
    return [found[step] for step in sorted(found)]


def _from_events(run: RunData) -> list[ResumeBoundary]:
    out = []
    for event in run.events_of("resume"):
        if event.step is not None:
            path = event.data.get("checkpoint") or event.data.get("path")
            out.append(ResumeBoundary(int(event.step), "the log reports a resume",
                              str(path) if path else None))
    return out


def late_start(loss: Series) -> tuple[int, float] | None:
    """(first step, logging interval) of a run that starts far from step 0: it continues
    another (None when it starts near 0)."""
    steps = loss.steps
    ordered = steps if np.all(steps[1:] >= steps[:-1]) else np.sort(steps)  # no copy if in order
    first, interval = int(ordered[0]), step_interval(ordered)
    return (first, interval) if first > max(100, LATE_START * interval) else None


def _from_steps(run: RunData) -> list[ResumeBoundary]:
    loss = run.get("loss")
    if loss is None:
        return []
    steps = loss.steps
    out = [ResumeBoundary(int(steps[i + 1]), "the logged steps go back")
           for i in np.flatnonzero(steps[1:] <= steps[:-1])]
    late = late_start(loss)
    if late is not None:
        out.append(ResumeBoundary(late[0], f"the run starts at step {late[0]}, not 0"))
    return out


def _from_lr(run: RunData) -> list[ResumeBoundary]:
    """LR jumps whose rise began right at a step where the run saved a checkpoint."""
    saved = _checkpoint_steps(run)
    out = []
    for jump in lr_jumps(run) if saved else []:
        at = [s for s in saved if jump.since <= s < jump.step]
        if at:
            out.append(ResumeBoundary(max(at) + 1, "the LR jumped back up right after a checkpoint"))
    return out


def _checkpoint_steps(run: RunData) -> list[int]:
    steps = [c.step for c in run.checkpoints if c.step is not None]
    every = run.config.get("save_steps")
    loss = run.get("loss")
    if not steps and isinstance(every, int | float) and every >= 1 and loss is not None:
        steps = list(range(int(every), int(loss.steps.max()) + 1, int(every)))
    return steps
