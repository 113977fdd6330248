"""Headroom JSONL: the format Headroom's own recorders write (docs/design.md).

The first line describes the run (name, start, shape, config); every other line
is one step's metrics, or a checkpoint, event or end-of-run summary record.
Unknown numeric keys are kept as extra metrics. A folder holding a
``headroom.jsonl`` (a recorder's default) is that run: the recorded log is the
richest account of it, so it wins over the framework's own files beside it.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from core.runlog import CheckpointRef, RunEvent, RunLog
from core.shape import RunShape
from tracker.readers._common import ReaderError, head, number, parse_json
from tracker.readers._tabular import add_columns, jsonl_columns
from tracker.readers.crash import oom_event
from tracker.record.writer import RUN_FILE

SOURCE = "headroom header"
# Lines carrying these objects are records, not metric rows.
RECORD_KEYS = (b'"checkpoint"', b'"event"', b'"summary"')


def sniff(path: Path) -> float:
    if path.is_dir():
        return 0.99 if (path / RUN_FILE).is_file() else 0.0
    first = head(path, 4096).lstrip().split(b"\n", 1)[0]
    return 0.99 if first.startswith(b'{"headroom"') else 0.0


def read(path: Path) -> RunLog:
    if path.is_dir():
        run = read(path / RUN_FILE)
        run.sources = [path / RUN_FILE]
        return run
    data = _read(path)
    end = data.find(b"\n")
    end = len(data) if end < 0 else end  # the header line's end
    try:
        header = parse_json(data[:end].decode("utf-8", errors="replace"))
    except ReaderError:
        raise ReaderError("line 1: the Headroom header is not valid JSON") from None
    info = header.get("run", {}) if isinstance(header, dict) else {}
    run = RunLog(format="headroom_jsonl", name=info.get("name") or path.parent.name or path.stem)
    run.started = _time(info.get("started"))
    run.shape = _shape(info.get("shape"))
    run.config = info.get("config") or {}
    data[:end] = b" " * end  # the rows' parser skips blank lines, and line numbers stay
    records = _take_records(data, end)
    columns = jsonl_columns(data)
    steps = columns.pop("step", None)
    if steps is None:
        if columns:
            raise ReaderError("metric lines have no \"step\" key")
    else:
        add_columns(run, columns, steps, skip={"wall_time"}, wall_time=columns.get("wall_time"))
    for record in records:
        _add_record(run, record)
    # The recorders end a run with a summary record; a log without one is still being written
    # (or its process was killed: the app calls it "crashed?" once it stops growing).
    ended = any(isinstance(r.get("summary"), dict) for r in records)
    run.status = "finished" if ended else "running"
    return run


def _read(path: Path) -> bytearray:
    """The file as a mutable buffer, so record lines can be blanked out without a copy."""
    with open(path, "rb") as f:
        data = bytearray(os.fstat(f.fileno()).st_size)
        del data[f.readinto(data):]  # a log that shrank since the stat
    return data


def _take_records(data: bytearray, start: int) -> list[dict]:
    """Parse the checkpoint, event and summary records from ``start`` on and blank their lines.

    Records are few: their lines are found by searching for their keys (in C),
    not by splitting a million metric lines in Python, and blanked in place (the
    rows' parser skips blank lines). A record line that does not parse stays, for
    the rows' parser to judge (it leaves out a live log's half-written last line).
    """
    spans = sorted({_line(data, at) for key in RECORD_KEYS for at in _find_all(data, key, start)})
    records = []
    for begin, end in spans:
        try:
            value = parse_json(data[begin:end].decode("utf-8", errors="replace"))
        except ReaderError:
            continue
        if isinstance(value, dict):
            records.append(value)
            data[begin:end] = b" " * (end - begin)
    return records


def _find_all(data: bytearray, key: bytes, start: int):
    at = data.find(key, start)
    while at >= 0:
        yield at
        at = data.find(key, at + len(key))


def _line(data: bytearray, at: int) -> tuple[int, int]:
    """(start, end) of the line holding byte ``at``; end is its newline or the data's end."""
    end = data.find(b"\n", at)
    return data.rfind(b"\n", 0, at) + 1, len(data) if end < 0 else end


def _add_record(run: RunLog, record: dict) -> None:
    step = record.get("step")
    if isinstance(record.get("checkpoint"), dict):
        ckpt = record["checkpoint"]
        run.checkpoints.append(
            CheckpointRef(step, str(ckpt.get("path", "")), dict(ckpt.get("metrics") or {}))
        )
    if isinstance(record.get("summary"), dict):
        run.summary.update({k: v for k, v in record["summary"].items() if number(v) is not None})
    if isinstance(record.get("event"), dict):
        event = record["event"]
        data = {k: v for k, v in event.items() if k not in ("kind", "message")}
        if event.get("kind") == "oom":  # the recorder keeps torch's message; its sizes are data
            data = {**oom_event(str(event.get("message", ""))).data, **data}
        run.events.append(
            RunEvent(str(event.get("kind", "event")), step, str(event.get("message", "")), data,
                     record.get("wall_time"))
        )


def _shape(values: dict | None) -> RunShape:
    shape = RunShape()
    if isinstance(values, dict):
        shape.update(values, SOURCE)
    return shape


def _time(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None

