"""Records the tracker hands out about stored series, free of the database and of numpy.

The runs table and ``headroom runs`` list thousands of series by these summaries
without reading a point, so this module stays cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Summary:
    """What the runs table needs of a series, without reading its points."""

    count: int
    first_step: int | None
    last_step: int | None
    min: float | None
    max: float | None
    last: float | None
    first_nonfinite_step: int | None


@dataclass(frozen=True)
class SeriesInfo(Summary):
    """A stored series: which one, and its summary statistics."""

    id: int = field(kw_only=True)
    name: str = field(kw_only=True)
    original_name: str = field(kw_only=True)
