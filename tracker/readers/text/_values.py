"""Numbers, sizes, durations and timestamps as console logs print them.

Logs write ``nan``/``inf``, ``1.263599E+01``, thousands separators (``4,376``)
and durations as ``0:00:24``, ``1m 60s`` or ``17:52:38.15``. One spelling of
each pattern here, so every dialect accepts the same forms.
"""

from __future__ import annotations

import ast
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from core.metrics import to_gib

# A number as logs print it; embed in dialect regexes. A comma counts only before
# three digits, so "lr=[1e-05, 2e-05]" keeps its list separator. Digits come first:
# that is what almost every number starts with, and the regex then fails fast.
NUM = (
    r"[-+]?(?:\d+(?:,\d{3})*(?:\.\d*)?(?:[eE][-+]?\d+)?"
    r"|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"
)
# A memory size with its unit: "20.00 MiB", "512 bytes", "4.75GB".
SIZE = rf"(?P<value>{NUM})\s*(?P<unit>bytes|[KMGT]i?B)\b"
STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"

_NUMBER = re.compile(NUM)
_SIZE = re.compile(SIZE)
_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_CLOCK = re.compile(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)")
_UNITS = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s|ms)\b")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}


def num(text: str) -> float:
    """A float from a logged number (separators dropped; ``nan``/``inf`` kept)."""
    return float(text.replace(",", ""))


def first_number(text: str) -> float | None:
    """The first number in ``text``, or None (for values such as ``'2.105'``)."""
    match = _NUMBER.search(text)
    return num(match.group()) if match else None


def size_gib(text: str) -> float | None:
    """A size such as ``'959.44 MiB'`` in GiB, or None when ``text`` holds none."""
    match = _SIZE.search(text)
    if match is None:
        return None
    return to_gib(num(match["value"]), "b" if match["unit"] == "bytes" else match["unit"])


def seconds(text: str) -> float | None:
    """A duration as trackers print it: ``0:00:24``, ``1 day, 2:03:04``, ``1m 60s``, ``120.5s``."""
    text = text.strip()
    clock = _CLOCK.fullmatch(text)
    if clock:
        days, hours, minutes, secs = clock.groups()
        return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(secs)
    parts = _UNITS.findall(text)
    if parts and _UNITS.sub("", text).strip() == "":
        return sum(float(value) * _UNIT_SECONDS[unit] for value, unit in parts)
    try:
        return float(text)
    except ValueError:
        return None


def stamp_time(text: str | None) -> float | None:
    """POSIX time of the first ``YYYY-mm-dd HH:MM:SS[.f]`` in ``text`` (local time, as logged)."""
    if not text:
        return None
    match = _STAMP.search(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, frac = match.groups()
    start = _hour_start(year, month, day, hour)
    if start is None:
        return None
    return start + int(minute) * 60 + int(second) + (float(f"0.{frac}") if frac else 0.0)


@lru_cache(maxsize=256)
def _hour_start(year: str, month: str, day: str, hour: str) -> float | None:
    """POSIX time of an hour's start; logs put many lines in one hour, so this is cached."""
    try:
        return datetime(int(year), int(month), int(day), int(hour)).timestamp()
    except ValueError:
        return None


_MAX_LITERAL = 20_000


def py_value(text: str) -> Any:
    """A value as Python printed it (``True``, ``1e-05``, ``{'a': 1}``, ``adamw_torch``).

    Literals are read with :func:`ast.literal_eval`, which evaluates no code;
    anything else (bare words, enum reprs) stays text.
    """
    text = text.strip()
    if len(text) <= _MAX_LITERAL:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return text
