"""What a sniffer sees of a file (one shared sample) and what it may answer (named tiers).

Every reader asked about a file gets the same :class:`Sample`: the head (and,
for the console dialects, a longer head and the tail) is read once and decoded
once, however many readers look at it. A
sniffer answers with a :class:`Confidence` tier, or with :func:`outranks` of a
tier where two formats show the same kind of evidence and one must win.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from tracker.readers._common import HEAD_BYTES, head, looks_binary

# The console dialects search this much of a log's start and end for their signatures.
SAMPLE_HEAD = 256 * 1024
SAMPLE_TAIL = 64 * 1024
# A magic string counts only this near the start of a file.
MAGIC_BYTES = 64
# Whether a file is text or binary is judged on its start.
BINARY_BYTES = 4096


class Confidence:
    """How sure a sniffer is; the registry takes the highest, ties going to the earlier row."""

    CERTAIN = 0.99  # a marker no other format writes (Headroom's header line)
    STRONG = 0.95  # the format's own file name with its content, or its signature line
    LIKELY = 0.9  # content only this format writes, under any name
    PROBABLE = 0.85  # a folder laid out like this format's runs
    HINT = 0.7  # a file this format writes beside its logs, or a banner line
    WEAK = 0.6  # evidence another format could show too
    GENERIC = 0.4  # any table or record stream with numbers (the generic readers)
    FALLBACK = 0.35  # the last resort: below every reader with a format of its own
    MINIMUM = 0.3  # below this a claim is ignored
    NONE = 0.0


def outranks(tier: float, by: int = 1) -> float:
    """A confidence just above ``tier`` (by hundredths), for the stronger of two claims at one tier."""
    return tier + by / 100


class Sample:
    """The name, head and tail of one file (or a folder, which has no content), each read once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.name = self.path.name.lower()
        # Sniffers that failed on this file: "reader: what went wrong", for the ingest report.
        self.failures: list[str] = []

    @cached_property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower()

    @cached_property
    def head(self) -> bytes:
        """The first 64 KiB (empty for folders, FIFOs and unreadable files)."""
        return b"" if self.is_dir else head(self.path, HEAD_BYTES)

    @cached_property
    def long_head(self) -> bytes:
        """The first 256 KiB, for the console dialects (read only when they are asked)."""
        return self.head if len(self.head) < HEAD_BYTES else head(self.path, SAMPLE_HEAD)

    @cached_property
    def tail(self) -> bytes:
        """The last bytes when the file is longer than the long head and the tail together."""
        if len(self.long_head) < SAMPLE_HEAD:
            return b""
        try:
            size = os.stat(self.path).st_size
            if size <= SAMPLE_HEAD + SAMPLE_TAIL:
                return b""
            with open(self.path, "rb") as f:
                f.seek(size - SAMPLE_TAIL)
                return f.read(SAMPLE_TAIL)
        except OSError:
            return b""

    @cached_property
    def binary(self) -> bool:
        """The first 4 KiB look binary (a log with a stray NUL further on is still text)."""
        return looks_binary(self.head[:BINARY_BYTES])

    @cached_property
    def text(self) -> str:
        """The head as text ("" when it looks binary); bad UTF-8 bytes become U+FFFD."""
        return "" if self.binary else self.head.decode("utf-8", errors="replace")

    def has_magic(self, magic: bytes) -> bool:
        return magic in self.head[:MAGIC_BYTES]

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """Cleaned lines of the head and the tail (logger prefixes and ranks split off)."""
        from tracker.readers.text._lines import split_line

        if self.binary:
            return ()
        data = self.long_head
        if self.tail:
            data = data[: data.rfind(b"\n") + 1] + self.tail[self.tail.find(b"\n") + 1:]
        texts: list[str] = []
        for raw in data.decode("utf-8", errors="replace").splitlines():
            texts.extend(text for text, _, _ in split_line(raw) if text.strip())
        return tuple(texts)
