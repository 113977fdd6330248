"""TFRecord framing, the container of TensorBoard event files.

A record is a little-endian uint64 length, the masked CRC-32C of those 8 bytes,
the payload, and the masked CRC-32C of the payload. TensorBoard's own loader
checks the checksums in pure Python (about 14 µs a record); google-crc32c does
it in C, so a million-record file frames in about a second.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from tracker.readers._common import ReaderError

HEADER = struct.Struct("<QI")  # length, masked crc of the length
FOOTER = struct.Struct("<I")  # masked crc of the payload
_MASK_DELTA = 0xA282EAD8


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C (rotated and offset so a CRC of CRCs stays strong)."""
    import google_crc32c

    return _mask(google_crc32c.value(data))


def frame(payload: bytes) -> bytes:
    """One record around ``payload`` (for writers and tests)."""
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc(length)) + payload + FOOTER.pack(masked_crc(payload))


class Records:
    """The payloads of a TFRecord byte string, checksums verified.

    A record cut short at the end of the data is taken as still being written:
    iteration stops there and ``incomplete_at`` says where. A checksum that
    fails anywhere else is damage, and raises :class:`ReaderError` naming the
    record and its byte offset.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.count = 0
        self.incomplete_at: int | None = None

    def __iter__(self) -> Iterator[bytes]:
        import google_crc32c

        crc, data, size = google_crc32c.value, self.data, len(self.data)
        unpack_header, unpack_footer = HEADER.unpack_from, FOOTER.unpack_from
        delta, mask = _MASK_DELTA, 0xFFFFFFFF
        pos = 0
        while pos < size:
            end = pos + HEADER.size
            if end > size:
                self.incomplete_at = pos
                return
            length, length_crc = unpack_header(data, pos)
            c = crc(data[pos : pos + 8])  # the masking is inlined: this loop runs per record
            if (((c >> 15) | (c << 17)) + delta) & mask != length_crc:
                raise self._damaged(pos, "damaged record header (length checksum mismatch)")
            stop = end + length
            if stop + FOOTER.size > size:
                self.incomplete_at = pos
                return
            payload = data[end:stop]
            c = crc(payload)
            if (((c >> 15) | (c << 17)) + delta) & mask != unpack_footer(data, stop)[0]:
                raise self._damaged(pos, "damaged record (checksum mismatch)")
            self.count += 1
            yield payload
            pos = stop + FOOTER.size

    def _damaged(self, pos: int, what: str) -> ReaderError:
        return ReaderError(f"record {self.count + 1:,} at byte {pos:,}: {what}")


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
