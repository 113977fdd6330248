"""System metrics that trackers sample on a clock (W&B stats, MLflow system metrics).

They are sampled every few seconds, apart from the training loop, so their own
"step" is a sample counter. Headroom places each sample on the training steps
by its wall time (interpolating between the logged steps), so GPU memory lines
up with loss and throughput. Per-GPU
memory becomes ``mem_used_gib/gpu<N>`` and, for the busiest GPU at each sample
(the one that decides whether a run fits), ``mem_used_gib``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.metrics import GIB
from core.runlog import RunLog


@dataclass
class Samples:
    """One row per sample: its wall time, and a column per metric (NaN where absent)."""

    wall: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    device_bytes: dict[int, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: list[tuple[float, dict[str, float]]]) -> Samples:
        wall = np.array([t for t, _ in rows], dtype=np.float64)
        names = dict.fromkeys(k for _, values in rows for k in values)
        columns = {k: np.full(len(rows), np.nan) for k in names}
        for i, (_, values) in enumerate(rows):
            for key, value in values.items():
                columns[key][i] = value
        return cls(wall, columns)


def steps_at(times: np.ndarray, ref_times: np.ndarray, ref_steps: np.ndarray) -> np.ndarray:
    """The training step at each time, interpolated between the logged (time, step) pairs.

    Samples before the first logged step belong to it, samples after the last to the last.
    """
    if len(ref_times) == 0:
        return np.arange(len(times), dtype=np.int64)
    order = np.argsort(ref_times, kind="stable")
    return np.floor(np.interp(times, ref_times[order], ref_steps[order])).astype(np.int64)


def add_samples(
    run: RunLog,
    samples: Samples,
    ref: tuple[np.ndarray, np.ndarray] | None = None,
    prefix: str = "",
) -> None:
    """Add every sampled column (named ``prefix + key``) and the GPU memory series to ``run``.

    ``ref`` is (wall times, steps) of the training metrics; without it the
    sample number is the step.
    """
    if len(samples.wall) == 0:
        return
    steps = steps_at(samples.wall, *ref) if ref is not None else np.arange(len(samples.wall))
    for key, values in samples.columns.items():
        keep = ~np.isnan(values)
        if keep.any():
            run.add_series(prefix + key, steps[keep], values[keep], samples.wall[keep])
    _add_device_memory(run, samples, steps)


def _add_device_memory(run: RunLog, samples: Samples, steps: np.ndarray) -> None:
    if not samples.device_bytes:
        return
    for device, values in sorted(samples.device_bytes.items()):
        keep = ~np.isnan(values)
        if keep.any():
            run.add_series(f"mem_used_gib/gpu{device}", steps[keep], values[keep] / GIB,
                           samples.wall[keep])
    stacked = np.vstack(list(samples.device_bytes.values()))
    keep = ~np.isnan(stacked).all(axis=0)
    if keep.any():
        busiest = np.nanmax(stacked[:, keep], axis=0)
        run.add_series("mem_used_gib", steps[keep], busiest / GIB, samples.wall[keep])
