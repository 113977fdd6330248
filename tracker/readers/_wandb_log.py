"""W&B's transaction log (``run-<id>.wandb``), read without the W&B service.

Modern W&B clients keep a run's history, system metrics, config and summary
only in this file (offline runs have nothing else). The framing is LevelDB's
log format behind a 7-byte W&B header: 32 KiB blocks of records, each with a
CRC-32, a length and a FULL/FIRST/MIDDLE/LAST type. Each record is a protobuf
``Record`` of W&B's own schema, decoded with the classes the ``wandb`` package
ships (an optional dependency, imported only here, only when needed).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracker.readers._common import ReaderError, number

MAGIC = b":W&B\xe1\xbe"  # ident ":W&B", then 0xBEE1 little-endian, then a version byte
VERSION = 0
BLOCK = 32 * 1024
HEADER = struct.Struct("<IHB")  # crc32, length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
INSTALL_HINT = "install wandb to read .wandb files (pip install 'headroom[wandb]')"


@dataclass
class WandbLog:
    """What one transaction log says, as plain Python values."""

    run: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, float]] = field(default_factory=list)
    stats: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    warnings: list[str] = field(default_factory=list)


def is_wandb_log(head: bytes) -> bool:
    return head.startswith(MAGIC)


def read_log(path: Path) -> WandbLog:
    """Decode every record of a transaction log; a torn tail (live run) ends the read quietly."""
    pb = _schema()
    log = WandbLog()
    for payload in records(path.read_bytes(), log.warnings):
        record = pb.Record()
        try:
            record.ParseFromString(payload)
        except Exception:  # protobuf's DecodeError: a damaged record, the rest may be fine
            log.warnings.append(f"{path.name}: a damaged record was skipped")
            continue
        _take(log, record)
    return log


def records(data: bytes, warnings: list[str]) -> Iterator[bytes]:
    """The payloads of a LevelDB-framed log, joined across blocks, CRC-checked."""
    if not data.startswith(MAGIC):
        raise ReaderError("not a W&B transaction log (no :W&B header)")
    if data[6] != VERSION:
        raise ReaderError(f"W&B transaction log version {data[6]} is not supported")
    pos, parts = 7, []
    while pos + HEADER.size <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER.size:  # the writer pads a block's last few bytes with zeros
            pos += left
            continue
        crc, length, kind = HEADER.unpack_from(data, pos)
        payload = data[pos + HEADER.size: pos + HEADER.size + length]
        if kind == 0 and length == 0:  # zero padding to the end of a block
            pos += left
            continue
        if len(payload) < length:
            break  # still being written
        if zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
            warnings.append(f"damaged data at byte {pos}; the log was read up to there")
            break
        pos += HEADER.size + length
        if kind in (FULL, FIRST):
            parts = [payload]
        else:
            parts.append(payload)
        if kind in (FULL, LAST):
            yield b"".join(parts)
            parts = []


def _schema():
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError:
        raise ReaderError(INSTALL_HINT) from None
    return wandb_internal_pb2


def _take(log: WandbLog, record) -> None:
    kind = record.WhichOneof("record_type")
    if kind == "history":
        log.history.append(_numbers(record.history.item))
    elif kind == "stats":
        when = record.stats.timestamp.seconds + record.stats.timestamp.nanos / 1e9
        log.stats.append((when, _numbers(record.stats.item)))
    elif kind == "summary":
        _apply(log.summary, record.summary.update, record.summary.remove)
    elif kind == "config":
        _apply(log.config, record.config.update, record.config.remove)
    elif kind == "run":
        _take_run(log, record.run)
    elif kind == "environment":
        from google.protobuf.json_format import MessageToDict

        log.environment.update(MessageToDict(record.environment))
    elif kind == "exit":
        log.exit_code = record.exit.exit_code


def _take_run(log: WandbLog, run) -> None:
    start = run.start_time.seconds + run.start_time.nanos / 1e9
    log.run.update(
        {
            "run_id": run.run_id, "display_name": run.display_name, "project": run.project,
            "entity": run.entity, "group": run.run_group, "job_type": run.job_type,
            "notes": run.notes, "tags": list(run.tags), "host": run.host,
            "start_time": start or None,
        }
    )
    _apply(log.config, run.config.update, [])
    _apply(log.summary, run.summary.update, [])


def _apply(target: dict[str, Any], updates, removes) -> None:
    for item in updates:
        target[_key(item)] = _value(item.value_json)
    for item in removes:
        target.pop(_key(item), None)


def _numbers(items) -> dict[str, float]:
    """Numeric values of history/stats items; nested objects flattened with "/"."""
    return flat_numbers({_key(item): _value(item.value_json) for item in items})


def flat_numbers(data: dict[str, Any]) -> dict[str, float]:
    """The numbers in a W&B dict (history row, summary), nested keys joined with "/"."""
    out: dict[str, float] = {}
    for key, value in data.items():
        _flatten_numbers(out, str(key), value)
    return out


def _flatten_numbers(out: dict[str, float], name: str, value: Any) -> None:
    if isinstance(value, dict):
        if value.get("_type"):  # media, tables, histograms: not scalars
            return
        for key, inner in value.items():
            _flatten_numbers(out, f"{name}/{key}", inner)
        return
    x = number(value) if not isinstance(value, str) else None
    if x is not None:
        out[name] = x


def _key(item) -> str:
    nested = getattr(item, "nested_key", None)  # stats items have only a plain key
    return "/".join(nested) if nested else item.key


def _value(text: str) -> Any:
    try:
        return json.loads(text)  # accepts the NaN and Infinity that W&B writes
    except ValueError:
        return text
