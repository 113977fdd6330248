"""What a reader hands to the tracker: one run's series, shape, events and config.

Plain dataclasses over numpy arrays, so readers stay free of the database and
the store can write a series as one array instead of one object per point.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.metrics import resolve
from core.shape import RunShape


@dataclass
class Series:
    """One metric of one run: steps and values, NaN and Inf kept as they are."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    original: str = ""
    wall_time: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.steps = np.ascontiguousarray(self.steps, dtype=np.int64)
        self.values = np.ascontiguousarray(self.values, dtype=np.float64)
        if self.wall_time is not None:
            self.wall_time = np.ascontiguousarray(self.wall_time, dtype=np.float64)
        if len(self.steps) != len(self.values):
            raise ValueError(f"{self.name}: {len(self.steps)} steps but {len(self.values)} values")
        self.original = self.original or self.name

    def __len__(self) -> int:
        return len(self.values)

    @property
    def has_wall_time(self) -> bool:
        return self.wall_time is not None

    def at(self, index: int) -> tuple[int, float]:
        """The step and value of one point."""
        return int(self.steps[index]), float(self.values[index])

    def slice(self, start: int, stop: int) -> Series:
        wall = None if self.wall_time is None else self.wall_time[start:stop]
        return Series(self.name, self.steps[start:stop], self.values[start:stop], self.original, wall)

    def chunks(self, size: int, start: int = 0) -> Iterator[Series]:
        """The points from ``start`` on, ``size`` at a time: how the store writes a series, so a
        long one kept out of memory (a reader's spooled series) is never loaded whole."""
        for begin in range(start, len(self), size):
            yield self.slice(begin, begin + size)

    def scaled(self, factor: float) -> Series:
        """The series in other units (itself when ``factor`` is 1)."""
        if factor == 1.0:
            return self
        return Series(self.name, self.steps, self.values * factor, self.original, self.wall_time)


@dataclass
class RunEvent:
    """Something that happened at a point of a run: an OOM, a NaN, a resume."""

    kind: str
    step: int | None = None
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    wall_time: float | None = None


@dataclass
class CheckpointRef:
    """A checkpoint that a log says was written (the folder may be gone since)."""

    step: int | None
    path: str
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class RunLog:
    """Everything one reader learned about one run."""

    format: str
    name: str
    series: dict[str, Series] = field(default_factory=dict)
    shape: RunShape = field(default_factory=RunShape)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    events: list[RunEvent] = field(default_factory=list)
    checkpoints: list[CheckpointRef] = field(default_factory=list)
    started: datetime | None = None
    sources: list[Path] = field(default_factory=list)
    key: str = ""
    warnings: list[str] = field(default_factory=list)
    # How the log says the run ended: "finished", "crashed", "running" (a format that
    # writes an end record has not written it yet), or "" when the format cannot say.
    status: str = ""

    def add_series(
        self,
        original: str,
        steps: Any,
        values: Any,
        wall_time: Any | None = None,
        *,
        scale: float = 1.0,
    ) -> Series | None:
        """Store a metric under its canonical name, scaled to canonical units.

        ``scale`` multiplies on top of the alias's own unit scale (for readers
        that know a unit the name does not say). A second metric mapping to an
        already-used canonical name keeps its original name, so nothing is lost.
        Returns None for an empty series.
        """
        if len(values) == 0:
            return None
        return self.add(Series(original, steps, values, original, wall_time), scale=scale)

    def add(self, series: Series, *, scale: float = 1.0) -> Series | None:
        """:meth:`add_series` for a series already built (one a reader kept out of memory):
        named by its ``original``, scaled likewise."""
        if len(series) == 0:
            return None
        original = series.original
        alias = resolve(original)
        name, factor = self._slot(original.strip(), alias)
        if name is None:
            self.warnings.append(f"metric {original!r} appears twice; the second copy was ignored")
            return None
        series = series.scaled(factor * scale)
        series.name = name
        self.series[name] = series
        return series

    def _slot(self, original: str, alias) -> tuple[str | None, float]:
        """Name and unit factor for a new series, resolving collisions on a canonical name.

        The metric literally called by the canonical name takes the slot; an
        alias that got there first moves to its own original name.
        """
        if alias.name not in self.series:
            return alias.name, alias.scale
        holder = self.series[alias.name]
        if original == alias.name and holder.original.strip() != alias.name:
            if resolve(holder.original).scale == 1.0:
                del self.series[alias.name]
                holder.name = holder.original.strip()
                self.series[holder.name] = holder
                return alias.name, alias.scale
        if original in self.series:
            return None, 1.0
        return original, 1.0

class PointTable:
    """Collects row-oriented points (step, {metric: value}) and builds series.

    For readers that see one log line at a time. Columns keep first-seen order.
    """

    def __init__(self) -> None:
        self._columns: dict[str, tuple[list[int], list[float], list[float]]] = {}

    def add(self, step: int, metrics: dict[str, float], wall_time: float | None = None) -> None:
        for key, value in metrics.items():
            steps, values, walls = self._columns.setdefault(key, ([], [], []))
            steps.append(step)
            values.append(value)
            walls.append(np.nan if wall_time is None else wall_time)

    def __bool__(self) -> bool:
        return bool(self._columns)

    def into(self, run: RunLog, scales: dict[str, float] | None = None) -> RunLog:
        """Add every collected column to ``run`` as a series."""
        scales = scales or {}
        for key, (steps, values, walls) in self._columns.items():
            wall = np.asarray(walls, dtype=np.float64)
            run.add_series(
                key, steps, values, None if np.isnan(wall).all() else wall,
                scale=scales.get(key, 1.0),
            )
        return run
