"""Which logs belong to one training job, and where a GPU sampler's samples fall on its steps.

A job often leaves several logs: two loggers writing the same metrics (Lightning's
CSV and TensorBoard loggers, a console log beside a JSON-lines log) and a sampler
of the GPUs (nvidia-smi, a monitoring script) writing on its own clock. MLflow and
W&B file these under one run; so does Headroom. Two logs are one job when their
loss curves are the same curve (same steps, values equal to the precision either
log printed), written by different kinds of logger (two files of one kind with one
curve are more likely two runs of a deterministic script), at the same time when
both logs say when. A sampler joins the run in its folder or the run whose time
it overlaps; its samples are placed on the run's steps by the run's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

import numpy as np

from core.runlog import Series

# Fewer loss points than this are too few to call two curves the same.
MIN_SHARED_POINTS = 3
# Printed values keep about 4 significant digits (HF rounds its logs to 4 decimals).
SAME_RTOL, SAME_ATOL = 1e-3, 1e-6
# Two loggers of one process stamp a step within this many seconds of each other.
SAME_TIME_S = 600.0
# A sampler's GPUs are busy while the busiest holds at least this share of its peak memory.
BUSY_SHARE = 0.5
# Config files beside the logs say nothing about which logger wrote the curves.
_CONFIG_SUFFIXES = {".yaml", ".yml", ".toml", ".ini", ".cfg", ".py", ".sh", ".md"}
_CONFIG_NAMES = ("args.json", "config.json", "adapter_config.json", "training_args.json",
                 "hparams.json", "generation_config.json", "wandb-metadata.json")
_CONSOLE = {".log", ".txt", ".out", ".err"}


def logger_kind(path: str) -> str | None:
    """The kind of logger that writes a file, or None for config files beside the logs."""
    p = PurePath(path)
    name, suffix = p.name.lower(), p.suffix.lower()
    if "tfevents" in name:
        return "tensorboard"
    if suffix in _CONFIG_SUFFIXES or name.endswith(_CONFIG_NAMES):
        return None
    if suffix in _CONSOLE:
        return "console"
    if suffix in (".csv", ".tsv"):
        return "csv"
    return suffix.lstrip(".") or name


def logger_kinds(paths: list[str]) -> set[str]:
    return {k for k in map(logger_kind, paths) if k is not None}


def same_curve(a: Series, b: Series) -> bool:
    """Whether two logs hold one curve: same steps, values equal to print precision, and,
    when both are timed, stamped at the same time."""
    if len(a) < MIN_SHARED_POINTS or len(a) != len(b) or not np.array_equal(a.steps, b.steps):
        return False
    if not np.allclose(a.values, b.values, rtol=SAME_RTOL, atol=SAME_ATOL, equal_nan=True):
        return False
    if a.wall_time is None or b.wall_time is None:
        return True
    gap = np.abs(a.wall_time - b.wall_time)
    gap = gap[np.isfinite(gap)]
    return not len(gap) or float(np.median(gap)) <= SAME_TIME_S


def covers(a: Series, b: Series) -> bool:
    """Whether every point of ``b`` is in ``a``: same step, value equal to print precision,
    the same time when both are timed (one logger may add a final point the other lacks)."""
    if not len(b) or len(a) < len(b):
        return False
    steps, first = np.unique(a.steps, return_index=True)
    at = np.searchsorted(steps, b.steps)
    if np.any(at >= len(steps)) or not np.array_equal(steps[np.minimum(at, len(steps) - 1)],
                                                      b.steps):
        return False
    picked = first[at]
    if not np.allclose(a.values[picked], b.values, rtol=SAME_RTOL, atol=SAME_ATOL,
                       equal_nan=True):
        return False
    if a.wall_time is None or b.wall_time is None:
        return True
    gap = np.abs(a.wall_time[picked] - b.wall_time)
    gap = gap[np.isfinite(gap)]
    return not len(gap) or float(np.median(gap)) <= SAME_TIME_S


def copy_to_keep(mine: Series, theirs: Series) -> str | None:
    """Of one metric two loggers wrote, the copy to keep: "mine", "theirs" (it has more
    points, or the same ones with wall times), or None when they are different curves."""
    if covers(mine, theirs):
        if len(theirs) == len(mine) and theirs.wall_time is not None and mine.wall_time is None:
            return "theirs"
        return "mine"
    return "theirs" if covers(theirs, mine) else None


@dataclass(frozen=True)
class Clock:
    """How a run's steps map to time: absolute wall times, or seconds since it began."""

    steps: np.ndarray
    seconds: np.ndarray
    absolute: bool

    @classmethod
    def of(cls, series: dict[str, Series]) -> Clock | None:
        """The run's clock: the series with the most wall times, else its elapsed seconds."""
        timed = [s for s in series.values()
                 if s.wall_time is not None and np.isfinite(s.wall_time).sum() >= 2]
        if timed:
            best = max(timed, key=lambda s: int(np.isfinite(s.wall_time).sum()))
            return cls._sorted(best.steps, best.wall_time, absolute=True)
        elapsed = series.get("elapsed_s")
        if elapsed is not None and np.isfinite(elapsed.values).sum() >= 2:
            return cls._sorted(elapsed.steps, elapsed.values, absolute=False)
        return None

    @classmethod
    def _sorted(cls, steps: np.ndarray, seconds: np.ndarray, absolute: bool) -> Clock:
        keep = np.isfinite(seconds)
        order = np.argsort(seconds[keep], kind="stable")
        return cls(steps[keep][order].astype(np.float64), seconds[keep][order], absolute)

    def span(self) -> tuple[float, float]:
        return float(self.seconds[0]), float(self.seconds[-1])


@dataclass
class Placement:
    """A sampler's series on the run's steps, and how they were placed, in words."""

    series: dict[str, Series]
    note: str
    left_out: int = 0  # samples outside the run's time


def busy_span(memory: Series) -> tuple[float, float] | None:
    """When the sampled GPUs held the job: the first and last sample at half the peak memory."""
    if memory.wall_time is None or not len(memory):
        return None
    values = np.nan_to_num(memory.values, nan=0.0)
    if values.max() <= 0:
        return None
    busy = np.flatnonzero(values >= BUSY_SHARE * values.max())
    return float(memory.wall_time[busy[0]]), float(memory.wall_time[busy[-1]])


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Seconds two time spans share (0 when apart)."""
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def place(samples: dict[str, Series], clock: Clock | None,
          steps: tuple[int, int]) -> Placement | None:
    """The sampler's series on the run's steps (``steps``: the run's first and last).

    With an absolute clock each sample goes to the step running at its time.
    With only the seconds since the start, the run's end is taken to be the end of
    the GPUs' busy span (its start is often model loading). Without a clock, the
    steps are spread evenly over the busy span. Several samples on one step become
    one point (the peak for memory, the mean otherwise); samples outside the run are
    left out. None when the sampler was not running during the run.
    """
    memory = samples.get("mem_used_gib")
    busy = busy_span(memory) if memory is not None else None
    if clock is not None and clock.absolute:
        times, at, note = clock.seconds, clock.steps, "placed on the steps by their wall times"
    elif busy is None:
        return None
    elif clock is not None:
        end = clock.seconds[-1]
        times, at = clock.seconds + (busy[1] - end), clock.steps
        note = "the run logs no clock: its last step is taken to end when the GPUs were freed"
    else:
        times = np.array(busy)
        at = np.array(steps, dtype=np.float64)
        note = "the run logs no time: its steps are spread over the GPUs' busy span"
    times, at = _with_first_step(np.asarray(times, float), np.asarray(at, float))
    placed = {name: _on_steps(s, times, at) for name, s in samples.items()}
    placed = {name: s for name, s in placed.items() if s is not None}
    if not placed:
        return None
    longest = max(samples.values(), key=len)
    outside = int((~_inside(longest.wall_time, times)).sum()) if longest.wall_time is not None else 0
    return Placement(placed, note, left_out=outside)


def _with_first_step(times: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logs stamp a step when it ends: the first step began one interval before its stamp."""
    if len(times) < 2:
        return times, at
    return (np.concatenate([[2 * times[0] - times[1]], times]),
            np.concatenate([[2 * at[0] - at[1]], at]))


def _inside(walls: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Samples taken after the first step began, by the last one's stamp."""
    return np.isfinite(walls) & (walls > times[0]) & (walls <= times[-1])


def _on_steps(series: Series, times: np.ndarray, at: np.ndarray) -> Series | None:
    """One point per step the samples fall on, within the run's time."""
    if series.wall_time is None:
        return None
    keep = _inside(series.wall_time, times) & np.isfinite(series.values)
    order = np.argsort(series.wall_time[keep], kind="stable")
    walls, values = series.wall_time[keep][order], series.values[keep][order]
    if not len(walls):
        return None
    # A sample taken while step N ran (after N-1's stamp, by N's) belongs to step N.
    step = np.ceil(np.interp(walls, times, at) - 1e-9).astype(np.int64)
    unique, first = np.unique(step, return_index=True)
    counts = np.diff(np.append(first, len(values)))
    if series.name.startswith("mem"):  # memory: the peak decides whether a run fits
        merged = np.maximum.reduceat(values, first)
    else:
        merged = np.add.reduceat(values, first) / counts
    wall = np.add.reduceat(walls, first) / counts
    return Series(series.name, unique, merged, series.original, wall)
