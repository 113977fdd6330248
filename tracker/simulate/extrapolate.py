"""From shortened models to the real depth: which models to build, and the affine extrapolation.

Each segment's peak is affine in the number of blocks of each stack (see
:mod:`tracker.simulate.segments`): a base model with one homogeneous block
per stack, and one more model per stack with two, give the intercept and
the slope. Leading blocks that differ (DeepSeek's dense layers) are built in
every model, so they are counted exactly rather than extrapolated.
"""

from __future__ import annotations

from tracker.simulate.config import Stack
from tracker.simulate.step import Measured

# Homogeneous blocks in the base model. Two, not one: the first block differs from the
# others by what the model's own loop keeps alive around it (the embedding output
# stays referenced while later blocks run), so "first" and "last" need distinct blocks.
BASE = 2


def variants(stacks: list[Stack]) -> list[dict[str, int]]:
    """Block counts to simulate: the base first, then one more block in each stack in turn."""
    base = {s.name: min(s.count, s.prefix + BASE) for s in stacks}
    more = [{**base, s.name: s.prefix + BASE + 1} for s in stacks if s.count > s.prefix + BASE]
    return [base, *more]


def extrapolate(stacks: list[Stack], counts: list[dict[str, int]],
                measured: list[Measured]) -> tuple[dict[tuple, tuple[float, dict[str, float]]], float]:
    """Every segment's peak, and the optimizer state, at the stacks' real depths."""
    base, others = measured[0], measured[1:]
    shared = set(base.peaks).intersection(*(m.peaks for m in others))
    real = {s.name: s.count for s in stacks}

    def scale(value_of) -> float:
        value = float(value_of(base))
        for c, m in zip(counts[1:], others, strict=True):
            grown = next(name for name in c if c[name] != counts[0][name])
            value += (value_of(m) - value_of(base)) * (real[grown] - counts[0][grown])
        return value

    peaks = {}
    for label in shared:
        keys = base.peaks[label][1]
        peaks[label] = (scale(lambda m, lb=label: m.peaks[lb][0]),
                        {k: scale(lambda m, lb=label, key=k: m.peaks[lb][1].get(key, 0))
                         for k in keys})
    return peaks, scale(lambda m: m.optimizer_state)
