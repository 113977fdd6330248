"""The hover readout: every shown run's value at the cursor's x, highest first."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from desktop.presenters import formatting as fmt
from desktop.presenters.plot_data import Panel, nearest

MAX_ROWS = 12


@dataclass(frozen=True)
class Row:
    """One curve's value at the cursor, as the readout lists it."""

    run_id: Hashable
    colour: str
    label: str
    value: float
    text: str  # the value, and the raw one or the band's range beside it


def rows(panel: Panel, x: float, near: float = 0.0,
         limit: int = MAX_ROWS) -> tuple[list[Row], int]:
    """The curves' values at ``x`` (nearest point within each curve), highest first, at most
    ``limit`` of them; and how many more there are. A sparse overlay (eval loss every 500
    steps) is listed only when it has a point within ``near`` of ``x``."""
    found = [row for curve in panel.curves if (row := _row(panel, curve, x, near)) is not None]
    found.sort(key=lambda r: -r.value if np.isfinite(r.value) else np.inf)
    return found[:limit], max(0, len(found) - limit)


def _row(panel: Panel, curve, x: float, near: float) -> Row | None:
    i = nearest(curve.x, x)
    if i is None or (curve.overlay and abs(curve.x[i] - x) > near):
        return None
    value = float(curve.shown[i])
    text = fmt.number(value)
    if curve.smooth is not None:
        text += f" (raw {fmt.number(float(curve.y[i]))})"
    band = next((b for b in panel.bands if b.run_id == curve.run_id and b.label == curve.label
                 and b.metric in ("", curve.metric)), None)
    j = nearest(band.x, x) if band is not None else None
    if j is not None:
        text += f" ({fmt.number(float(band.low[j]))}–{fmt.number(float(band.high[j]))})"
    label = curve.label if not curve.overlay else f"{curve.label} · {curve.metric}"
    return Row(curve.run_id, curve.colour, label, value, text)
