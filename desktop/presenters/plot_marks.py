"""What the plots draw over the curves: checkpoints, diagnostic findings, the resume lineage.

Checkpoints sit on the loss curve (a star for the best); a finding shades its
step range on every panel of its run and marks its steps on the curve of the
metric it is about; a run resumed from another run's checkpoint gets a
boundary labelled with where it came from. Everything is placed here in plot
coordinates, without Qt, from the same x transform as the curves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

import numpy as np

from core.checkpoints import Checkpoint
from core.diagnostics import Finding, title

if TYPE_CHECKING:
    from desktop.presenters.plot_data import Panel, PlottedRun
    from tracker.checkpoints.lineage import Lineage

# Panels whose curve carries the checkpoint marks (training loss, else eval loss).
CHECKPOINT_PANELS = ("loss", "eval_loss")
# A finding that names no metric (an OOM) is marked on the loss curve.
DEFAULT_METRIC = "loss"
STATUS_WORDS = {"ok": "", "lfs": "Git-LFS pointer", "missing": "missing on disk",
                "deleted": "moved to the trash", "unreadable": "unreadable",
                "logged": "named in the log"}

ToX = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class CheckpointMark:
    """A checkpoint as the plot needs it."""

    step: int
    name: str
    status: str = "ok"
    best: bool = False
    latest: bool = False

    @property
    def present(self) -> bool:
        return self.status in ("ok", "lfs")


@dataclass(frozen=True)
class Origin:
    """Where a resumed run came from: the step it continued at, in words."""

    step: int
    text: str


@dataclass(frozen=True)
class Focus:
    """A finding the user selected: the plots zoom to its steps and highlight it."""

    key: tuple[int, int]  # (run id, index in the run's findings)
    metric: str | None  # the panel that shows it best (None: the loss)


@dataclass
class Mark:
    """A symbol at one point of a curve, with its hover text."""

    kind: str  # "checkpoint" or "finding"
    x: float
    y: float
    colour: str
    tip: str
    best: bool = False  # checkpoints: the best one (drawn as a star)
    hollow: bool = False  # checkpoints whose files are not here
    severity: str = ""  # findings
    key: tuple[int, int] | None = None


@dataclass
class Region:
    """A finding's step range, shaded in its severity's colour."""

    x0: float
    x1: float
    severity: str
    tip: str
    key: tuple[int, int]


@dataclass
class Boundary:
    """A resume boundary from the checkpoint lineage, with the run it continued."""

    x: float
    colour: str
    text: str
    line: bool  # False when a resume event already draws the line here


@dataclass
class Annotations:
    marks: list[Mark] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)

    def scale(self, factor: float) -> None:
        """Divide every x by ``factor`` (seconds to the relative axis's unit)."""
        for mark in self.marks:
            mark.x /= factor
        for region in self.regions:
            region.x0, region.x1 = region.x0 / factor, region.x1 / factor
        for boundary in self.boundaries:
            boundary.x /= factor


def checkpoint_marks(checkpoints: Iterable[Checkpoint], best: Checkpoint | None = None,
                     latest: Checkpoint | None = None) -> list[CheckpointMark]:
    """Marks for a run's checkpoints, the best and the latest flagged."""
    return [CheckpointMark(c.step, PurePath(c.path).name, c.status, c is best, c is latest)
            for c in checkpoints if c.step is not None and c.link_to is None]


def origin(lineage: Lineage | None, parent_name: str | None) -> Origin | None:
    """The boundary a resumed run's plot shows, when the checkpoint it resumed is stored."""
    if lineage is None or lineage.parent_run is None or lineage.parent_step is None:
        return None
    step = lineage.parent_step
    if lineage.parent_run == lineage.run_id:
        return Origin(step, f"from its own checkpoint at step {step:,}")
    return Origin(step, f"from {parent_name or f'run {lineage.parent_run}'} · step {step:,}")


def annotate(panel: Panel, run: PlottedRun, colour: str, to_x: ToX) -> None:
    """Add ``run``'s marks, shaded ranges and lineage boundary to ``panel`` (after its curves)."""
    mine = {c.metric: c for c in panel.curves if c.run_id == run.run_id}
    if not mine:
        return
    notes = panel.annotations
    if panel.metric in CHECKPOINT_PANELS:
        follow = mine.get(panel.metric) or next(iter(mine.values()))
        notes.marks += _checkpoints(run.checkpoints, follow, colour, to_x)
        if run.origin is not None:
            notes.boundaries += _boundary(run.origin, run.resumes, colour, to_x)
    for index, finding in enumerate(run.findings):
        key = (run.run_id, index)
        region = _region(finding, key, to_x)
        if region is not None:
            notes.regions.append(region)
        curve = mine.get(finding.metric or DEFAULT_METRIC)
        if curve is not None:
            notes.marks += _finding_marks(finding, key, curve, to_x)


def _checkpoints(checkpoints: list[CheckpointMark], curve, colour: str, to_x: ToX) -> list[Mark]:
    if not checkpoints:
        return []
    xs = to_x(np.array([c.step for c in checkpoints], dtype=np.int64))
    ys = on_curve(curve, xs)
    return [Mark("checkpoint", float(x), float(y), colour, _checkpoint_tip(c), best=c.best,
                 hollow=not c.present)
            for c, x, y in zip(checkpoints, xs, ys, strict=True) if np.isfinite(x + y)]


def _checkpoint_tip(c: CheckpointMark) -> str:
    badges = [word for word, on in (("best", c.best), ("latest", c.latest)) if on]
    status = STATUS_WORDS.get(c.status, c.status)
    extra = [", ".join(badges)] if badges else []
    return " · ".join([f"checkpoint {c.name} (step {c.step:,})", *extra, *([status] if status
                                                                           else [])])


def _region(finding: Finding, key: tuple[int, int], to_x: ToX) -> Region | None:
    if finding.step_start is None:
        return None
    end = finding.step_end if finding.step_end is not None else finding.step_start
    x0, x1 = to_x(np.array([finding.step_start, end], dtype=np.int64))
    if not np.isfinite(x0 + x1):
        return None
    return Region(float(x0), float(x1), finding.severity, _finding_tip(finding), key)


def _finding_marks(finding: Finding, key: tuple[int, int], curve, to_x: ToX) -> list[Mark]:
    if not finding.marks:
        return []
    xs = to_x(np.array(finding.marks, dtype=np.int64))
    ys = on_curve(curve, xs, raw=True)  # the value that happened, not the smoothed one
    return [Mark("finding", float(x), float(y), "", _finding_tip(finding),
                 severity=finding.severity, key=key)
            for x, y in zip(xs, ys, strict=True) if np.isfinite(x + y)]


def _finding_tip(finding: Finding) -> str:
    return f"{title(finding.kind)} ({finding.severity})\n{finding.message}"


def _boundary(origin: Origin, resumes: list[int], colour: str, to_x: ToX) -> list[Boundary]:
    (x,) = to_x(np.array([origin.step], dtype=np.int64))
    if not np.isfinite(x):
        return []
    return [Boundary(float(x), colour, origin.text, line=origin.step not in resumes)]


def on_curve(curve, xs: np.ndarray, raw: bool = False) -> np.ndarray:
    """The curve's y at each x: as shown (smoothed when smoothing is on) or ``raw``.

    Between points the value is interpolated over the finite ones; NaN when there are none.
    """
    values = curve.y if raw else curve.shown
    keep = np.isfinite(curve.x) & np.isfinite(values)
    if not keep.any():
        return np.full(len(xs), np.nan)
    x, y = curve.x[keep], values[keep]
    return np.interp(xs, x, y, left=y[0], right=y[-1])


def region_of(panels: Iterable[Panel], key: tuple[int, int] | None) -> Region | None:
    """The shaded range of the finding ``key`` (the same on every panel of its run)."""
    for panel in panels:
        for region in panel.annotations.regions:
            if region.key == key:
                return region
    return None


def zoom_range(region: Region, span: tuple[float, float]) -> tuple[float, float]:
    """An x range showing ``region`` with context either side, kept within ``span``."""
    width = span[1] - span[0]
    pad = max((region.x1 - region.x0) * 1.5, width * 0.04, 1e-9)
    return max(span[0], region.x0 - pad), min(span[1], region.x1 + pad)


def y_extent(panel: Panel, x_range: tuple[float, float]) -> tuple[float, float] | None:
    """The lowest and highest finite y the panel's curves reach within ``x_range``."""
    low, high = np.inf, -np.inf
    for curve in panel.curves:
        inside = (curve.x >= x_range[0]) & (curve.x <= x_range[1])
        for y in (curve.y[inside], curve.shown[inside]):
            y = y[np.isfinite(y)]
            if len(y):
                low, high = min(low, float(y.min())), max(high, float(y.max()))
    return (low, high) if low <= high else None
