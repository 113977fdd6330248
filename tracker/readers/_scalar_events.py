"""Vectorised decoding of the one event layout that makes up nearly every event file.

``SummaryWriter.add_scalar`` writes each point as its own small event, always
serialised the same way (protobuf writes fields in field-number order)::

    09 <wall_time: 8 bytes>                    Event.wall_time   (field 1, double)
    10 <step: varint>                          Event.step        (field 2; absent when 0)
    2a <len>                                   Event.summary     (field 5)
      0a <len>                                   Summary.value   (field 1, one entry)
        0a <len> <tag bytes>                       Value.tag     (field 1)
        15 <value: 4 bytes>                        Value.simple_value (field 2, float)

Checking that layout and reading its fields for a million records at once with
numpy takes a fraction of a second; parsing them one by one with the protobuf
library takes seconds. Every record that does not match the layout exactly
(text, tensors, the file header, anything unforeseen) is left to the protobuf
parser, so the fast path can only ever decline, never misread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Zero bytes appended so fixed-width reads near the end stay in bounds: tags are read at
# the width of the longest (at most 118 bytes on this path, rounded up to 8).
_PAD = 256
_VARINT_MAX = 10


@dataclass
class Scalars:
    """The records that matched, as columns.

    Attributes:
        matched: mask over the records given: True where the layout matched.
        tag_ids: per matched record, an index into ``tags``.
        tags: the distinct tags.
        steps, wall_time, values: per matched record.
    """

    matched: np.ndarray
    tag_ids: np.ndarray
    tags: list[str]
    steps: np.ndarray
    wall_time: np.ndarray
    values: np.ndarray


def decode(data: bytes, offsets: np.ndarray, lengths: np.ndarray) -> Scalars:
    """Decode every record of the simple-scalar layout among the payloads given."""
    buf = np.frombuffer(data + bytes(_PAD), dtype=np.uint8)
    end = offsets + lengths
    ok = (lengths >= 16) & (buf[offsets] == 0x09)
    wall = _read(buf, offsets + 1, 8).view("<f8").ravel()
    pos = offsets + 9
    has_step = buf[pos] == 0x10
    step, width = _varint(buf, pos + 1)
    ok &= ~has_step | (width > 0)
    step = np.where(has_step, step, 0)
    pos = np.where(has_step, pos + 1 + width, pos)
    # The summary, its single value and the tag: each a field byte and a one-byte length
    # (a longer varint declines the fast path); the first two end where the record ends.
    for field in (0x2A, 0x0A):
        ok &= (buf[pos] == field) & (buf[pos + 1] < 0x80) & (pos + 2 + buf[pos + 1] == end)
        pos = pos + 2
    tag_len = buf[pos + 1].astype(np.int64)
    value_at = pos + 2 + tag_len
    ok &= (buf[pos] == 0x0A) & (tag_len < 0x80) & (value_at + 5 == end)
    ok &= buf[np.minimum(value_at, len(buf) - 1)] == 0x15
    rows = np.flatnonzero(ok)
    values = _read(buf, value_at[rows] + 1, 4).view("<f4").ravel().astype(np.float64)
    tag_ids, tags = _tags(buf, pos[rows] + 2, tag_len[rows])
    return Scalars(ok, tag_ids, tags, step[rows], wall[rows], values)


def _read(buf: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each start, as an (n, width) matrix (rows of a sliding window: no index matrix)."""
    return np.lib.stride_tricks.sliding_window_view(buf, width)[starts]


def _varint(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protobuf varints at ``starts``: values (int64, two's complement) and byte widths (0: invalid)."""
    raw = _read(buf, starts, _VARINT_MAX)
    last = (raw & 0x80) == 0
    width = np.where(last.any(axis=1), last.argmax(axis=1) + 1, 0)
    value = np.zeros(len(starts), dtype=np.uint64)
    for k in range(int(width.max()) if len(width) else 0):  # steps are short varints: few passes
        part = (raw[:, k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        value |= np.where(k < width, part, np.uint64(0))
    return value.view(np.int64), width


def _tags(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Tag index per record and the distinct tags, in order of first appearance.

    Equal byte strings are grouped through a 64-bit hash (pandas' hash table
    needs no sort), then checked byte for byte, so a collision cannot merge
    two tags.
    """
    import pandas as pd

    if not len(starts):
        return np.zeros(0, dtype=np.int64), []
    width = -(-int(lengths.max()) // 8) * 8 or 8
    names = _read(buf, starts, width)
    names[np.arange(width) >= lengths[:, None]] = 0
    digest = lengths.astype(np.uint64)
    for word in names.view("<u8").T:  # FNV-1a over 8-byte words
        digest = (digest ^ word) * np.uint64(0x100000001B3)
    ids, first = _factorize(pd.factorize(digest)[0])
    if not (names == names[first][ids]).all() or not (lengths == lengths[first][ids]).all():
        ids, first = _factorize(pd.factorize(pd.Series(list(map(bytes, names))))[0])
    tags = [bytes(names[i, : lengths[i]]).decode("utf-8", errors="replace") for i in first]
    return ids, tags


def _factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group ids numbered in order of first appearance, and the row where each first appears."""
    first = np.flatnonzero(np.diff(np.maximum.accumulate(ids), prepend=-1) > 0)
    return ids.astype(np.int64), first
