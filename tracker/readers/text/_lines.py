"""Console logs as clean lines, streamed with bounded memory.

A captured console is rarely one clean line per message. SLURM (``srun
--label``), ``kubectl logs --prefix``, pdsh and ``torchrun --tee`` put labels in
front; loggers add timestamps and levels; tqdm redraws with a bare ``\\r``;
Windows ends lines with ``\\r\\n``; torchtitan colours with ANSI codes; ranks
writing at once glue their lines together. :func:`lines` undoes all of that
while reading the file in fixed-size chunks, so a 2 GB log never sits in
memory: only the current chunk and the current line do.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from tracker.readers.text._values import STAMP

CHUNK = 1 << 20
# A "line" longer than this (a progress bar without newlines, binary junk) is cut.
MAX_LINE = 1 << 16

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][A-Z0-9]|[=>78])")
# Prefixes in the order they stack: launcher label, rank tag, logger header.
_LABEL = re.compile(
    r"(?:\s*(?P<task>\d{1,5}): "  # srun --label
    r"|\[(?:rank|default)(?P<rank>\d+)\]:\s?"  # torchrun --tee / --log-line-prefix-template
    r"|(?P<host>[A-Za-z][\w.-]*(?:\d|-)[\w.-]*)(?:/\d+)?: "  # pdsh, kubectl logs --prefix
    r"|[\w.-]+/\d+ (?=\S))"  # job/task labels such as "p4_v2_perf/0 "
)
_LOGGER = re.compile(
    rf"(?:\[(?P<s1>{STAMP})\] \[[A-Z]+\] \[[^\]]*\] "  # DeepSpeed: [ts] [INFO] [file.py:12:fn]
    rf"|\[titan\] (?P<s2>{STAMP}) - [\w.]+ - [A-Z]+ - "  # torchtitan
    rf"|(?P<s3>{STAMP})(?: [\w.]+)? - [\w.]+ - [A-Z]+ - "  # logging "%(asctime)s - name - LEVEL - "
    rf"|(?P<s4>{STAMP}) \| [A-Z]+ +\| [\w.:<>]+ - "  # loguru
    rf"|\[(?:[A-Z]+\|)?(?P<s5>{STAMP})\] [\w.]+:\d+ >> "  # LLaMA-Factory "[INFO|ts] module:12 >> "
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+\] "  # ms-swift "[INFO:swift] "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:(?!//))"  # logging.basicConfig "INFO:name:"
)
# Where ranks glued their lines together: before a "[Rank N]" or "[rankN]:" tag,
# before Megatron's timestamped iteration line, and after a Megatron "|" that a
# capitalised message follows without a space.
_GLUE = re.compile(
    rf"(?<=\S)(?=\[Rank \d+\] )|(?<=\S)(?=\[rank\d+\]:)"
    rf"|(?<=\S)(?= ?\[{STAMP}\] iteration )|(?<=\|)(?=[A-Z][a-z])"
)

_CAPITAL_AFTER_BAR = re.compile(r"\|[A-Z][a-z]")


class Line(NamedTuple):
    """One message of a console log, with what its prefixes said."""

    text: str
    label: str | None = None  # srun task, torchrun rank or host that printed it
    stamp: str | None = None  # logger timestamp, unparsed (parsing costs; few lines need it)
    number: int = 0  # 1-based line number in the file


def lines(path: Path) -> Iterator[Line]:
    """Clean lines of a text log; empty lines are skipped."""
    for number, raw in _raw_lines(path):
        for text, label, stamp in split_line(raw):
            if text.strip():
                yield Line(text, label, stamp, number)


def split_line(raw: str) -> list[tuple[str, str | None, str | None]]:
    """A physical line as (text, label, stamp) messages: no codes or prefixes, glued ranks apart."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    text, label, stamp = strip_prefixes(raw)
    if _maybe_glued(text) and _GLUE.search(text):
        pieces = [piece for piece in _GLUE.split(text) if piece.strip()]
        return [(piece, label, stamp) if i == 0 else _glued(piece, label, stamp)
                for i, piece in enumerate(pieces)]
    return [(text, label, stamp)]


def _maybe_glued(text: str) -> bool:
    """Cheap substring tests first: the glue regex is slow on long lines, and most are whole."""
    if text.find("[Rank ", 1) > 0 or text.find("[rank", 1) > 0 or text.find("] iteration ", 40) > 0:
        return True
    return "|" in text and not text.rstrip().endswith("|") and bool(_CAPITAL_AFTER_BAR.search(text))


def _glued(piece: str, label: str | None, stamp: str | None) -> tuple[str, str | None, str | None]:
    text, own_label, own_stamp = strip_prefixes(piece)
    return text, own_label or label, own_stamp or stamp


def strip_prefixes(text: str) -> tuple[str, str | None, str | None]:
    """``text`` without launcher labels and logger headers; the label and timestamp they held."""
    label = stamp = None
    while True:
        match = _LABEL.match(text)
        if match is None:
            break
        label = label or match["task"] or match["rank"] or match["host"]
        text = text[match.end():]
    match = _LOGGER.match(text)
    if match is not None:
        stamp = next((s for s in match.groups() if s), None)
        text = text[match.end():]
    return text, label, stamp


def _raw_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Physical lines split on ``\\n``, ``\\r\\n`` and tqdm's bare ``\\r``, decoded leniently."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    tail = ""
    number = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            text = tail + decoder.decode(chunk)
            parts = text.splitlines(keepends=True)
            tail = parts.pop() if parts and not parts[-1].endswith(("\n", "\r")) else ""
            for part in parts:
                yield number + 1, part.rstrip("\r\n")[:MAX_LINE]
                number += part.endswith("\n")
            if len(tail) > MAX_LINE:
                tail = tail[:MAX_LINE]  # an endless "line": keep its head, drop the rest
        tail += decoder.decode(b"", final=True)
    if tail:
        yield number + 1, tail[:MAX_LINE]
