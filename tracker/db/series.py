"""Metric series as binary chunks, with summary statistics kept beside them.

A million-point series is 16 rows of raw little-endian arrays, written with one
``executemany`` and read back with ``np.frombuffer``: no object per point.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np
from sqlalchemy import delete, insert, select

from core.runlog import Series
from tracker.db.schema import SeriesChunk, SeriesRow
from tracker.db.unit import Unit
from tracker.model import Summary

CHUNK = 1 << 16
# Chunks inserted per statement: few enough that a long series never sits encoded whole.
_ROWS_PER_INSERT = 4
_STEP = np.dtype("<i8")
_VALUE = np.dtype("<f8")


def summarize(steps: np.ndarray, values: np.ndarray) -> Summary:
    """Count, step range, finite min/max, last value and first NaN/Inf step."""
    if len(values) == 0:
        return Summary(0, None, None, None, None, None, None)
    finite = np.isfinite(values)
    bad = np.flatnonzero(~finite)
    has_finite = bool(finite.any())
    return Summary(
        count=len(values),
        first_step=int(steps[0]),
        last_step=int(steps[-1]),
        min=float(values[finite].min()) if has_finite else None,
        max=float(values[finite].max()) if has_finite else None,
        last=_num(values[-1]),
        first_nonfinite_step=int(steps[bad[0]]) if len(bad) else None,
    )


def _combine(a: Summary, b: Summary) -> Summary:
    """The summary of two runs of points, ``a``'s before ``b``'s."""
    if not a.count or not b.count:
        return b if not a.count else a
    return Summary(
        count=a.count + b.count,
        first_step=a.first_step,
        last_step=b.last_step,
        min=_pick(min, a.min, b.min),
        max=_pick(max, a.max, b.max),
        last=b.last,
        first_nonfinite_step=a.first_nonfinite_step if a.first_nonfinite_step is not None
        else b.first_nonfinite_step,
    )


def _pick(choose, a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else choose(a, b)


def summary_of(series: Series) -> Summary:
    """:func:`summarize` of a series read a chunk at a time."""
    summary = summarize(np.empty(0), np.empty(0))
    for part in series.chunks(CHUNK):
        summary = _combine(summary, summarize(part.steps, part.values))
    return summary


def _num(value: float) -> float | None:
    """A float the database can hold; NaN has no portable form, so it is None."""
    value = float(value)
    return None if math.isnan(value) else value


def write_all(unit: Unit, run_id: int, series: Iterable[Series]) -> int:
    """Insert new series with all their points, in order; returns the points written.

    Series of one chunk (nearly all of a small log's) go in together: their rows,
    summaries included, in one INSERT and their chunks in one ``executemany``, so a
    small ingest costs two statements rather than three per series. A longer one
    streams through :func:`write`, a few chunks at a time.
    """
    points, short = 0, []
    for one in series:
        points += len(one)
        if len(one) <= CHUNK:
            short.append(one)
            continue
        _write_short(unit, run_id, short)
        short = []
        write(unit, run_id, one)
    _write_short(unit, run_id, short)
    return points


def _write_short(unit: Unit, run_id: int, series: list[Series]) -> None:
    rows = [SeriesRow(run_id=run_id, name=s.name, original_name=s.original,
                      has_wall_time=s.has_wall_time, **summarize(s.steps, s.values).__dict__)
            for s in series]
    unit.session.add_all(rows)
    unit.session.flush()
    chunks = [_chunk_row(row.id, 0, s) for row, s in zip(rows, series, strict=True) if len(s)]
    if chunks:
        unit.session.execute(insert(SeriesChunk), chunks)


def write(unit: Unit, run_id: int, series: Series) -> int:
    """Insert a new series with all its points; returns its id."""
    row = SeriesRow(run_id=run_id, name=series.name, original_name=series.original,
                    has_wall_time=series.has_wall_time, count=0)
    unit.session.add(row)
    unit.session.flush()
    _set_summary(row, _insert_chunks(unit, row.id, series.chunks(CHUNK), first_seq=0))
    return row.id


def replace(unit: Unit, row: SeriesRow, series: Series) -> None:
    """Rewrite a stored series whose earlier points changed."""
    unit.session.execute(delete(SeriesChunk).where(SeriesChunk.series_id == row.id))
    row.original_name = series.original
    row.has_wall_time = series.has_wall_time
    _set_summary(row, _insert_chunks(unit, row.id, series.chunks(CHUNK), first_seq=0))


def extends(row: SeriesRow, series: Series) -> bool:
    """True when ``series`` is the stored one plus new points at the end."""
    n = row.count
    if len(series) < n or n == 0 or series.has_wall_time != row.has_wall_time:
        return False
    step, last = series.at(n - 1)
    same_value = (row.last is None and math.isnan(last)) or row.last == last
    return step == row.last_step and same_value


def append(unit: Unit, row: SeriesRow, series: Series) -> int:
    """Store only the points of ``series`` beyond the stored ones; returns how many.

    The last chunk is merged with the new points while it is short, so a log
    that grows a line at a time does not leave thousands of tiny chunks.
    """
    added = len(series) - row.count
    if added <= 0:
        return 0
    last = unit.session.execute(
        select(SeriesChunk).where(SeriesChunk.series_id == row.id).order_by(SeriesChunk.seq.desc())
    ).scalars().first()
    start, first_seq, head = row.count, 0, None
    if last is not None and last.n < CHUNK:
        head, first_seq = _decode(last), last.seq
        start += CHUNK - last.n  # the new points that fill the short chunk up
        unit.session.delete(last)
        unit.session.flush()
    elif last is not None:
        first_seq = last.seq + 1
    pieces = series.chunks(CHUNK, start)
    if head is not None:
        pieces = itertools.chain([_concat(head, series.slice(row.count, start))], pieces)
    _insert_chunks(unit, row.id, pieces, first_seq=first_seq)
    _set_summary(row, summary_of(series))
    return added


def read(unit: Unit, series_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Steps, values and wall times (or None) of a stored series."""
    chunks = unit.session.execute(
        select(SeriesChunk.steps, SeriesChunk.values, SeriesChunk.wall_time, SeriesChunk.n)
        .where(SeriesChunk.series_id == series_id)
        .order_by(SeriesChunk.seq)
    ).all()
    if not chunks:
        return np.empty(0, np.int64), np.empty(0, np.float64), None
    steps = np.concatenate([decode_steps(c[0], c[3]) for c in chunks]).astype(np.int64, copy=False)
    values = np.frombuffer(b"".join(c[1] for c in chunks), _VALUE).astype(np.float64, copy=False)
    walls = None
    if all(c[2] is not None for c in chunks):
        walls = np.frombuffer(b"".join(c[2] for c in chunks), _VALUE).astype(np.float64, copy=False)
    return steps, values, walls


def encode_steps(steps: np.ndarray) -> bytes:
    """Steps as stored: evenly spaced ones (the usual case) as start and stride, 16 bytes
    for the whole chunk instead of 8 per point; any other run of steps as it is."""
    if len(steps) > 2:
        stride = steps[1] - steps[0]
        if np.array_equal(steps, steps[0] + stride * np.arange(len(steps))):
            return np.array([steps[0], stride], _STEP).tobytes()
    return steps.astype(_STEP, copy=False).tobytes()


def decode_steps(blob: bytes, n: int) -> np.ndarray:
    """The inverse of :func:`encode_steps` (a chunk of more than 2 points in 16 bytes is even)."""
    if n > 2 and len(blob) == 2 * _STEP.itemsize:
        start, stride = np.frombuffer(blob, _STEP)
        return start + stride * np.arange(n, dtype=np.int64)
    return np.frombuffer(blob, _STEP)


def _insert_chunks(unit: Unit, series_id: int, pieces: Iterable[Series], first_seq: int) -> Summary:
    """Insert chunks of at most CHUNK points, a few per statement (memory stays a few chunks
    whatever the series' length); returns the summary of the points written."""
    summary = summarize(np.empty(0), np.empty(0))
    rows = []
    for seq, part in enumerate(pieces, start=first_seq):
        summary = _combine(summary, summarize(part.steps, part.values))
        rows.append(_chunk_row(series_id, seq, part))
        if len(rows) == _ROWS_PER_INSERT:
            unit.session.execute(insert(SeriesChunk), rows)
            rows = []
    if rows:
        unit.session.execute(insert(SeriesChunk), rows)
    return summary


def _chunk_row(series_id: int, seq: int, part: Series) -> dict:
    """The chunk table's row of ``part`` (at most CHUNK points)."""
    wall = None if part.wall_time is None else part.wall_time.astype(_VALUE, copy=False).tobytes()
    return {"series_id": series_id, "seq": seq, "n": len(part), "steps": encode_steps(part.steps),
            "values": part.values.astype(_VALUE, copy=False).tobytes(), "wall_time": wall}


def _decode(chunk: SeriesChunk) -> Series:
    wall = None if chunk.wall_time is None else np.frombuffer(chunk.wall_time, _VALUE)
    steps = decode_steps(chunk.steps, chunk.n)
    return Series("", steps, np.frombuffer(chunk.values, _VALUE), "-", wall)


def _concat(a: Series, b: Series) -> Series:
    wall = None
    if a.wall_time is not None and b.wall_time is not None:
        wall = np.concatenate([a.wall_time, b.wall_time])
    steps, values = np.concatenate([a.steps, b.steps]), np.concatenate([a.values, b.values])
    return Series(b.name, steps, values, b.original, wall)


def _set_summary(row: SeriesRow, summary: Summary) -> None:
    for key, value in summary.__dict__.items():
        setattr(row, key, value)


def rows_of(unit: Unit, run_id: int) -> list[SeriesRow]:
    """A run's stored series rows (names and summaries; points are read apart)."""
    return list(unit.session.execute(select(SeriesRow).where(SeriesRow.run_id == run_id)).scalars())


def read_named(unit: Unit, run_id: int, name: str) -> Series | None:
    """A run's stored series called ``name``, all its points; None when it has none."""
    row = unit.session.execute(
        select(SeriesRow).where(SeriesRow.run_id == run_id, SeriesRow.name == name)
    ).scalar_one_or_none()
    if row is None:
        return None
    steps, values, walls = read(unit, row.id)
    return Series(name, steps, values, row.original_name, walls)


def metric_names(unit: Unit) -> list[str]:
    """Every metric name some stored run has."""
    return list(unit.session.execute(select(SeriesRow.name).distinct()).scalars())
