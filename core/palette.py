"""Run colours: a palette of colours told apart on white, assigned to runs as they are stored.

Tableau 10 first (distinct for the common forms of colour blindness), then ten
more of other hues and depths. A new run takes the colour fewest runs have, so
runs stored together differ; the colour is stored with the run and stays the
same in every view and after restarts (the user may choose another).
"""

from __future__ import annotations

from collections.abc import Mapping

PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
    "#a6761d", "#17becf", "#8c2d04", "#6a3d9a", "#2f4b7c",
)


def next_colour(counts: Mapping[str, int]) -> str:
    """The palette colour the fewest runs have (``counts``: runs per colour), the earliest
    on a tie."""
    return min(PALETTE, key=lambda c: (counts.get(c, 0), PALETTE.index(c)))


def fallback(run_id: int) -> str:
    """The colour of a run stored before colours were kept: fixed by its id."""
    return PALETTE[(run_id - 1) % len(PALETTE)]
