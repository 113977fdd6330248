"""Numbers and times as the app shows them: short, aligned, never "nan" by accident."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

MISSING = "—"


def number(value: float | int | None, digits: int = 4) -> str:
    """A compact number: ``digits`` significant digits, separators for big ones."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    if 10**digits <= abs(value) < 1e12:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def count(value: float | int | None) -> str:
    """An integer count with thousands separators."""
    return "" if value is None else f"{int(round(value)):,}"


def gib(value: float | None) -> str:
    """Memory in GiB with one decimal, as GPU sizes are spoken of."""
    return "" if value is None else f"{value:.1f}"


def when(value: datetime | None) -> str:
    """A moment in the user's local time, to the minute."""
    if value is None:
        return ""
    if value.tzinfo is not None:
        value = value.astimezone()
    return value.strftime("%Y-%m-%d %H:%M")


_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))


def compact(value: float | None) -> str:
    """A big quantity the way people say it: 1.2B, 350M, 12K."""
    if value is None:
        return ""
    for size, suffix in _SUFFIXES:
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def setting(value: Any) -> str:
    """A setting's value as one short line (a dash when the run does not say)."""
    if value is None:
        return MISSING
    if isinstance(value, (bool, int, float)):
        return number(value, digits=6)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=str, separators=(", ", ": "))
    return str(value)


_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


def duration(seconds: float | None) -> str:
    """A training time as people say it: 45 min, 6.2 h, 3.5 days."""
    if seconds is None:
        return MISSING
    for unit, size in _UNITS:
        if seconds >= size or unit == "s":
            value = seconds / size
            return f"{value:.0f} {unit}" if value >= 10 or unit == "s" else f"{value:.1f} {unit}"
    return ""


def words(items: list[str], last: str = "and") -> str:
    """Items as a sentence says them: "a", "a and b", "a, b and c"."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"
