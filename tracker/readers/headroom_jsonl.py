"""Headroom JSONL: the format Headroom's own recorders write (docs/design.md).

The first line describes the run (name, start, shape, config); every other line
is one step's metrics, or a checkpoint, event or end-of-run summary record.
Unknown numeric keys are kept as extra metrics. A folder holding a
``headroom.jsonl`` (a recorder's default) is that run: the recorded log is the
richest account of it, so it wins over the framework's own files beside it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from core.runlog import CheckpointRef, RunEvent, RunLog
from core.shape import RunShape
from core.status import RunStatus
from tracker.readers._common import ReaderError, number, one_run, open_regular, parse_json
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._table import Layout, read_table
from tracker.readers._tabular import json_lines_blocks

SOURCE = "headroom header"
# Lines carrying these objects are records, not metric rows.
RECORD_KEYS = (b'"checkpoint"', b'"event"', b'"summary"')


def sniff(sample: Sample) -> float:
    if sample.is_dir:
        return Confidence.CERTAIN if _run_file(sample.path).is_file() else Confidence.NONE
    first = sample.head[:4096].lstrip().split(b"\n", 1)[0]
    return Confidence.CERTAIN if first.startswith(b'{"headroom"') else Confidence.NONE


def read(path: Path) -> RunLog:
    if path.is_dir():
        run = read(_run_file(path))
        run.sources = [_run_file(path)]
        return run
    with open_regular(path) as f:
        line = f.readline()
    end = len(line) - line.endswith(b"\n")  # the header line's end
    try:
        header = parse_json(line[:end].decode("utf-8", errors="replace"))
    except ReaderError:
        raise ReaderError("line 1: the Headroom header is not valid JSON") from None
    info = header.get("run", {}) if isinstance(header, dict) else {}
    run = RunLog(format="headroom_jsonl", name=info.get("name") or path.parent.name or path.stem)
    run.started = _time(info.get("started"))
    run.shape = _shape(info.get("shape"))
    run.config = info.get("config") or {}
    records: dict[int, list[dict]] = {}  # by the byte offset of their block

    def prepare(data: bytearray, offset: int) -> None:
        """Blank the header and the records: the rows' parser skips blank lines, and line
        numbers stay."""
        start = end if offset == 0 else 0
        data[:start] = b" " * start
        records[offset] = _take_records(data, start)

    read_table(json_lines_blocks(path, prepare), Layout("step", recorded=True)).finish(run)
    found = [record for offset in sorted(records) for record in records[offset]]
    for record in found:
        _add_record(run, record)
    # The recorders end a run with a summary record; a log without one is still being written
    # (or its process was killed: the app calls it "crashed?" once it stops growing).
    ended = any(isinstance(r.get("summary"), dict) for r in found)
    run.status = RunStatus.FINISHED if ended else RunStatus.RUNNING
    return run


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


def _run_file(folder: Path) -> Path:
    """The Headroom log in a run folder (the recorders' name for it, imported only here:
    reading a log file needs none of the recorders)."""
    from tracker.record.writer import RUN_FILE

    return folder / RUN_FILE


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
            from tracker.readers.crash import oom_event  # the crash patterns: only for an OOM

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


read_runs = one_run(read)  # the reader interface (tracker.readers)
