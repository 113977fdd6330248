"""A log table's numeric columns into series, a block of rows at a time.

A generic table (JSON lines, CSV) says nothing of its layout: which column is
the step is decided by name and by how many rows carry it, which holds wall
times by its values, which metrics are end-of-run figures by where they appear.
Read a block at a time, so that memory stays bounded, those decisions are taken
on the first block and checked once the whole file is read; the rare file whose
later rows change one (a step column that thins out, a time column with a value
out of range, a field pyarrow types differently further down) is read again with
the decisions the whole file gives. A table of one block is judged exactly as
if it had been read whole, which it was.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from core.runlog import RunLog
from tracker.readers._common import ReaderError
from tracker.readers._spool import Builder, Spool
from tracker.readers._tabular import (
    NO_STEP,
    STEP_RANGE,
    Column,
    carried,
    epoch_divisor,
    step_column,
    wall_candidates,
)

# A table whose decisions keep changing is read at most this many times.
MAX_PASSES = 3


@dataclass
class Block:
    """One block's rows: candidate numeric columns (rows counted from the block's first).

    ``line_of`` maps a row to its line in the file; ``python``: parsed line by
    line (pyarrow refused the block); ``kinds``: the JSON type pyarrow gave each
    field, to tell whether it would have refused the whole file.
    """

    columns: dict[str, Column]
    rows: int
    line_of: Callable[[int], int] | None = None
    python: bool = False
    kinds: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Layout:
    """What the format states itself: Headroom JSONL names its step and wall-time keys
    (``recorded``: nothing is guessed, no step is carried, no figure is end-of-run);
    a caller may name the step of a generic table."""

    step: str | None = None
    recorded: bool = False

    @property
    def wall(self) -> str | None:
        return "wall_time" if self.recorded else None


@dataclass(frozen=True)
class Plan:
    """The decisions: step and wall-time columns, the first step (rows before it take it),
    and whether every block is parsed line by line (as pyarrow, refusing the file, would)."""

    step: str | None
    wall: str | None
    wall_ms: bool = False
    first_step: int | float | None = None
    python: bool = False


@dataclass
class _Stats:
    """What the decisions need of one column, gathered over the blocks."""

    present: int = 0
    first: int = -1  # rows of the first and last value
    last: int = -1
    last_value: float = math.nan
    first_stated: int = -1  # the same for finite values (steps)
    first_stated_value: int | float | None = None
    last_stated: int = -1
    finite: bool = True
    low: float = math.inf
    high: float = -math.inf
    bad: int = 0
    first_bad: int = -1
    text: bool = False  # pyarrow typed it as text in some block: numbers count only if most cells are
    found: int = 0
    valid: int = 0

    def numeric(self) -> bool:
        return self.found > 0 and (not self.text or 2 * self.found >= self.valid)

    def add(self, col: Column, first: int) -> None:
        rows = np.flatnonzero(col.present)
        self.found += len(rows)
        self.valid += len(rows) if col.text_cells is None else col.text_cells
        self.text |= col.text_cells is not None
        self.bad += col.bad
        if col.bad and self.first_bad < 0:
            self.first_bad = first + col.first_bad
        if not len(rows):
            return
        values = col.values[rows]
        finite = np.isfinite(values)
        self.present += len(rows)
        self.first = first + int(rows[0]) if self.first < 0 else self.first
        self.last, self.last_value = first + int(rows[-1]), float(values[-1])
        self.finite &= bool(finite.all())
        self.low, self.high = min(self.low, values.min()), max(self.high, values.max())
        stated = rows[finite]
        if len(stated):
            if self.first_stated < 0:
                self.first_stated, self.first_stated_value = first + int(stated[0]), col.values[stated[0]]
            self.last_stated = first + int(stated[-1])


class Table:
    """Blocks of a table in, series out: see the module docstring."""

    def __init__(self, layout: Layout = Layout(), plan: Plan | None = None) -> None:
        self.layout, self.plan = layout, plan
        self._forced = plan is not None
        self.stats: dict[str, _Stats] = {}
        self.rows = 0
        self._spool = Spool()
        self._builders: dict[str, Builder] = {}
        self._complete: dict[str, bool] = {}  # every kept row of the metric had a wall time
        self._lines: list[tuple[int, Callable[[int], int] | None]] = []
        self._last_step: int | float | None = None
        self._outside: tuple[int, float] | None = None  # the first step past int64: row, value
        self._python = self._conflict = self._arrow_text = False
        self._kinds: dict[str, str] = {}

    def add(self, block: Block) -> None:
        first = self.rows
        for name, col in block.columns.items():
            self.stats.setdefault(name, _Stats()).add(col, first)
        self._note_parse(block)
        if self.plan is None:
            self.plan = self._decide()
        self._compose(block, first)
        self.rows += block.rows
        self._lines.append((first, block.line_of))

    def replan(self) -> Plan | None:
        """The decisions the whole table gives, when they differ from those it was read with."""
        if self.plan is None:
            return None
        plan = self._decide()
        return None if plan == self.plan else plan

    def numeric(self) -> list[str]:
        """The table's numeric columns, in the order they first appear."""
        return [name for name, stats in self.stats.items() if stats.numeric()]

    def finish(self, run: RunLog, names: dict[str, str] | None = None) -> RunLog:
        """Add the series (renamed by ``names``), end-of-run figures and warnings to ``run``."""
        plan = self.plan or Plan(None, None)
        numeric = self.numeric()
        metrics = [n for n in numeric if n not in (plan.step, plan.wall)]
        if self.layout.recorded:
            if plan.step is None and numeric:
                raise ReaderError('metric lines have no "step" key')
        elif not numeric:
            raise ReaderError("no numeric columns")
        elif not metrics:
            raise ReaderError(f"no numeric columns besides {plan.step or plan.wall!r}")
        elif plan.step is None:
            run.warnings.append(NO_STEP)
        else:
            metrics = [n for n in metrics if not self._summary(run, n, plan.step, names or {})]
        if self._outside is not None and any(len(self._builders.get(n, ())) for n in metrics):
            row, value = self._outside
            shown = f"{value:.0f}" if math.isfinite(value) else str(value)
            low, high = STEP_RANGE
            raise ReaderError(f"{self._where(row)}: step {shown} is outside the 64-bit range "
                              f"steps are stored in ({low:,} to {high:,})")
        for name in metrics:
            stats, shown = self.stats[name], (names or {}).get(name, name)
            if stats.bad:
                run.warnings.append(f"{shown}: {stats.bad} non-numeric cell(s) taken as missing "
                                    f"(first on {self._where(stats.first_bad)})")
            if name in self._builders:
                run.add(self._builders[name].build(shown, wall_time=self._complete[name]))
        return run

    # Decisions

    def _note_parse(self, block: Block) -> None:
        """What tells whether pyarrow would have refused the whole file: a block it refused, or a
        field of two kinds in two blocks; it matters only where pyarrow typed a field as text."""
        self._python |= block.python
        self._arrow_text |= not block.python and any(c.text_cells is not None
                                                     for c in block.columns.values())
        for name, kind in block.kinds.items():
            self._conflict |= self._kinds.setdefault(name, kind) != kind

    def _decide(self) -> Plan:
        python = (self._forced and self.plan.python) or (
            (self._python or self._conflict) and self._arrow_text)
        numeric = self.numeric()
        if self.layout.recorded:
            step = "step" if "step" in numeric else None
            return Plan(step, "wall_time" if "wall_time" in numeric else None, python=python)
        step = self.layout.step or self._dense_step(numeric)
        wall, ms = self._wall(numeric, step)
        first = self.stats[step].first_stated_value if step in self.stats else None
        return Plan(step, wall, ms, first, python)

    def _dense_step(self, numeric: list[str]) -> str | None:
        """The step column, if it is on most rows (not a step written once on a final line)."""
        name = step_column(numeric)
        return name if name is not None and self.stats[name].present >= 0.5 * self.rows else None

    def _wall(self, numeric: list[str], step: str | None) -> tuple[str | None, bool]:
        """The column holding each row's epoch time, and whether in milliseconds."""
        for name in wall_candidates(numeric, exclude=step):
            s = self.stats[name]
            divisor = epoch_divisor(s.present, s.finite, s.low, s.high)
            if divisor is not None:
                return name, divisor != 1.0
        return None, False

    def _summary(self, run: RunLog, name: str, step: str, names: dict[str, str]) -> bool:
        """A metric only after the last step (a final summary line) is an end-of-run figure."""
        stats = self.stats[name]
        if stats.present and stats.first > self.stats[step].last_stated:
            run.summary[names.get(name, name)] = stats.last_value
            return True
        return False

    # Composing series

    def _compose(self, block: Block, first: int) -> None:
        plan, columns = self.plan, block.columns
        steps, present = self._steps(columns.get(plan.step), block.rows, first)
        wall = columns.get(plan.wall) if plan.wall else None
        walls = None if wall is None else wall.values / 1000.0 if plan.wall_ms else wall.values
        for name, col in columns.items():
            if name in (plan.step, plan.wall):
                continue
            keep = present & col.present
            if not keep.any():
                continue
            if name not in self._builders:
                self._builders[name] = self._spool.builder(wall_time=plan.wall is not None)
                self._complete[name] = True
            kept_walls = None
            if plan.wall is not None:
                complete = wall is not None and bool(wall.present[keep].all())
                self._complete[name] &= complete
                kept_walls = walls[keep] if wall is not None else np.full(int(keep.sum()), math.nan)
            self._builders[name].append(steps[keep], col.values[keep], kept_walls)

    def _steps(self, col: Column | None, n: int, first: int) -> tuple[np.ndarray, np.ndarray]:
        """The block's steps as int64 and which rows have one."""
        if self.plan.step is None:
            if self.layout.recorded:
                return np.zeros(n, np.int64), np.zeros(n, bool)
            return np.arange(first, first + n, dtype=np.int64), np.ones(n, bool)
        if col is None:
            col = Column(np.zeros(n), np.zeros(n, bool))
        values, present = col.values, col.present
        if not self.layout.recorded:
            values, present = self._carry(values, present & np.isfinite(values))
        return self._int64(values, present, first), present

    def _carry(self, values: np.ndarray, stated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows without a step take the step of the row before; rows before the first step, it."""
        seed = self.plan.first_step if self._last_step is None else self._last_step
        if stated.any():
            self._last_step = values[np.flatnonzero(stated)[-1]]
        if seed is None:
            return values, stated
        filled = carried(Column(np.concatenate([np.asarray([seed], values.dtype), values]),
                                np.concatenate([[True], stated])))
        return filled.values[1:], filled.present[1:]

    def _int64(self, values: np.ndarray, present: np.ndarray, first: int) -> np.ndarray:
        """Steps as int64; one outside that range is kept back for an error naming its line."""
        if values.dtype.kind != "f":
            return values.astype(np.int64)
        outside = present & ((values < STEP_RANGE[0]) | (values >= 2.0**63))
        if outside.any() and self._outside is None:
            row = int(np.flatnonzero(outside)[0])
            self._outside = (first + row, float(values[row]))
        # Rows without a step (NaN) are no points: 0 stands in, as for a step out of range.
        return np.where(present & ~outside, values, 0.0).astype(np.int64)

    def _where(self, row: int) -> str:
        first, line_of = self._lines[bisect_right([f for f, _ in self._lines], row) - 1]
        return f"line {line_of(row - first)}" if line_of else f"row {row + 1}"


def read_table(blocks: Callable[[bool], Iterable[Block]], layout: Layout = Layout()) -> Table:
    """A table from its blocks (``blocks(python)``: parsed line by line when True), read again
    while the whole file's decisions differ from those it was read with."""
    table = Table(layout)
    for _ in range(MAX_PASSES):
        for block in blocks(bool(table.plan and table.plan.python)):
            table.add(block)
        plan = table.replan()
        if plan is None:
            break
        table = Table(layout, plan)
    return table


def add_table(run: RunLog, columns: dict[str, Column], step: str | None = None) -> RunLog:
    """A generic table's numeric columns, held whole, as series of ``run``.

    The step is ``step`` or else the first column with a step-like name that
    most rows carry; rows without one take the step of the row before (an eval
    line), and metrics that only appear after the last step (a final summary
    line) go to the summary. With no step column the row number is the step,
    and the run says so in a warning.
    """
    rows = len(next(iter(columns.values())).values) if columns else 0
    line_of = next((c.line_of for c in columns.values() if c.line_of), None)
    table = Table(Layout(step))
    table.add(Block(columns, rows, line_of))
    return table.finish(run)
