"""TFRecord framing, the container of TensorBoard event files.

A record is a little-endian uint64 length, the masked CRC-32C of those 8 bytes,
the payload, and the masked CRC-32C of the payload. A Python loop finds where
the records are (it has to: each length says where the next one starts); the
checksums are then verified grouped by record length: short records (nearly all
of a file: one scalar each) at once with numpy, a byte column at a time across
all of them; long ones one whole record at a time with google-crc32c, in C (a
byte column at a time, one 8 MB record took 37 s). TensorBoard's own loader
checks them in pure Python, record by record, at about 14 µs each. A file is
framed a block at a time (:func:`blocks`), so its size never sets the memory.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from tracker.readers import _common
from tracker.readers._common import ReaderError

HEADER = 12  # length, masked crc of the length
FOOTER = 4  # masked crc of the payload
_MASK_DELTA = 0xA282EAD8
_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_BLOCK_BYTES = 1 << 22  # bytes of records checked per numpy pass, to bound memory
# Records longer than this are checked one by one in C: numpy's pass costs a loop step per byte.
_LONG = 256


def _table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_CRC_TABLE = _table()


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of one payload (rotated and offset, as TensorFlow does)."""
    import google_crc32c

    return _mask_one(google_crc32c.value(data))


def frame(payload: bytes) -> bytes:
    """One record around ``payload`` (for writers and tests)."""
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc(length)) + payload + struct.pack("<I", masked_crc(payload))


@dataclass
class Records:
    """Where the payloads of a TFRecord byte string are.

    Attributes:
        offsets: byte offset of each payload.
        lengths: its length.
        incomplete_at: where a record cut short by the end of the data starts
            (a file still being written), or None.
    """

    offsets: np.ndarray
    lengths: np.ndarray
    incomplete_at: int | None = None

    def __len__(self) -> int:
        return len(self.offsets)


def scan(data: bytes, first: int = 0, at: int = 0) -> Records:
    """Frame ``data`` and verify every checksum.

    A record cut short at the end is taken as still being written (or, in a
    block of a file, as one the next block completes); a checksum that fails
    anywhere is damage, and raises :class:`ReaderError` naming the record and
    its byte offset (``first`` records and ``at`` bytes of the file come before
    ``data``).
    """
    offsets, end, incomplete = _frame(data, first, at)
    starts = np.array(offsets, dtype=np.int64)
    # Each record ends where the next one's header starts: the lengths need no second list.
    lengths = np.diff(starts, append=end) - (HEADER + FOOTER)
    records = Records(starts + HEADER, lengths, incomplete)
    buf = np.frombuffer(data, dtype=np.uint8)
    headers = records.offsets - HEADER
    where = (first, at)
    _verify(buf, headers, np.full(len(records), 8), headers + 8, headers, where,
            "damaged record header (length checksum mismatch)")
    _verify(buf, records.offsets, records.lengths, records.offsets + records.lengths, headers, where,
            "damaged record (checksum mismatch)")
    return records


class FileRecords:
    """A file's records a block at a time: each block holds whole records only, and
    ``incomplete_at`` says, once the blocks are read, where a last record cut short starts."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.incomplete_at: int | None = None

    def __iter__(self) -> Iterator[tuple[bytes, Records, int]]:
        """(block, its records, the number of records before it in the file)."""
        tail, at, first = b"", 0, 0
        while chunk := self.file.read(_common.BLOCK_BYTES):
            data = tail + chunk if tail else chunk
            records = scan(data, first, at)
            if len(records):
                yield data, records, first
            end = len(data) if records.incomplete_at is None else records.incomplete_at
            tail, at, first = data[end:], at + end, first + len(records)
        self.incomplete_at = at if tail else None


def _frame(data: bytes, first: int, at: int) -> tuple[list[int], int, int | None]:
    """Where each complete record starts, where the last one ends, where an incomplete one starts."""
    unpack = struct.Struct("<Q").unpack_from
    starts: list[int] = []
    add = starts.append
    pos, size = 0, len(data)
    while pos + HEADER <= size:
        (length,) = unpack(data, pos)
        end = pos + HEADER + length + FOOTER
        if end > size:
            # Cut short, or a damaged length pointing past the end: the checksum tells which.
            if masked_crc(data[pos : pos + 8]) != struct.unpack_from("<I", data, pos + 8)[0]:
                raise ReaderError(f"record {first + len(starts) + 1:,} at byte {at + pos:,}: "
                                  "damaged record header (length checksum mismatch)")
            return starts, pos, pos
        add(pos)
        pos = end
    return starts, pos, (pos if pos < size else None)


def _verify(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, crc_at: np.ndarray,
            headers: np.ndarray, where: tuple[int, int], damage: str) -> None:
    """Check the masked CRC-32C of each buf[start:start+length] against the uint32 at ``crc_at``."""
    stored = _gather(buf, crc_at, 4).view("<u4").ravel()
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        if length > _LONG:
            _verify_long(buf, starts, int(length), stored, rows, headers, where, damage)
            continue
        step = max(1, _BLOCK_BYTES // max(int(length), 1))
        for block in range(0, len(rows), step):
            part = rows[block : block + step]
            bad = np.flatnonzero(_mask(_crc32c(_gather(buf, starts[part], int(length)))) != stored[part])
            if len(bad):
                _damaged(int(part[bad[0]]), headers, where, damage)


def _verify_long(buf: np.ndarray, starts: np.ndarray, length: int, stored: np.ndarray,
                 rows: np.ndarray, headers: np.ndarray, where: tuple[int, int], damage: str) -> None:
    """The same check for long records, each whole record's CRC computed by google-crc32c."""
    import google_crc32c

    data = buf.data
    for row in rows.tolist():
        start = int(starts[row])
        if _mask_one(google_crc32c.value(bytes(data[start : start + length]))) != stored[row]:
            _damaged(row, headers, where, damage)


def _damaged(row: int, headers: np.ndarray, where: tuple[int, int], damage: str) -> None:
    first, at = where
    raise ReaderError(f"record {first + row + 1:,} at byte {at + int(headers[row]):,}: {damage}")


def _mask_one(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _gather(buf: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``width`` bytes starting at each of ``starts`` (rows of a sliding window)."""
    if width == 0:
        return np.zeros((len(starts), 0), dtype=np.uint8)
    return np.lib.stride_tricks.sliding_window_view(buf, width)[starts]


def _crc32c(rows: np.ndarray) -> np.ndarray:
    """CRC-32C of each row of a byte matrix, a byte column at a time."""
    crc = np.full(len(rows), 0xFFFFFFFF, dtype=np.uint32)
    for column in rows.T:
        crc = _CRC_TABLE[(crc ^ column) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def _mask(crc: np.ndarray) -> np.ndarray:
    return ((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)
