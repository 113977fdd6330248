"""TensorBoard event files: every scalar point of every tag, with its wall time.

TensorBoard's ``EventAccumulator`` keeps a 10,000-point reservoir per tag by
default and parses about 50,000 points a second. Headroom frames the records
itself (:mod:`tracker.readers._tfrecord`), decodes the simple scalar events that
make up nearly all of a file in bulk (:mod:`tracker.readers._scalar_events`)
and every other record with the event protobuf, keeping every point, a block of
the file at a time into a spool (:mod:`tracker.readers._spool`): memory stays
bounded whatever the file's size. A folder holding several event files is one
run (a resumed run writes a new file), read in the order the files were created;
steps that go back are untangled as TensorBoard does (a run that resumed is read
twice: the first pass finds the resumes, the second drops the points they
replaced), and each resume is recorded as an event.

Besides scalars (PyTorch's ``simple_value`` and TF2's ``scalars``-plugin
tensors), text summaries fill the run's config (HF Trainer writes its
``TrainingArguments`` and model config as JSON, Megatron every argument) and the
hparams plugin adds the hyperparameters; both give the run's shape.
"""

from __future__ import annotations

import ast
import json
import os
import re
from array import array
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.hf_config import shape_fields as model_fields
from core.runlog import RunLog, Series
from core.train_args import shape_fields as args_fields
from tracker.readers._common import ReaderError, open_regular
from tracker.readers._restarts import Backs, Points, Rewind, drop_orphans, events, find_resumes
from tracker.readers._scalar_events import Scalars, decode
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._spool import Builder, Spool
from tracker.readers._tfrecord import FileRecords
from tracker.readers.hf_trainer import SUMMARY_KEYS

EVENT_FILE = re.compile(r"events\.out\.tfevents\.(\d+)")
TEXT_SUFFIX = "/text_summary"
HPARAMS_TAG = "_hparams_/session_start_info"
# Folders named after what they hold rather than the run: name the run after the parent.
GENERIC_DIRS = {"tensorboard", "tb", "tb_logs", "tblogs", "logs", "log", "events", "summaries"}


def sniff(sample: Sample) -> float:
    if sample.is_dir:
        return Confidence.PROBABLE if event_files(sample.path) else Confidence.NONE
    if EVENT_FILE.match(sample.path.name):
        return Confidence.STRONG
    # A renamed event file: its first record is the file_version event.
    return Confidence.LIKELY if sample.has_magic(b"brain.Event:") else Confidence.NONE


def read_runs(path: Path) -> list[RunLog]:
    """A file is one run; a folder is one run, plus one per subfolder holding event files."""
    if path.is_file():
        return [read_files([path], run_name(path.parent))]
    main = _collect(event_files(path), run_name(path))
    runs = []
    for sub in _subruns(path):
        rel = sub.relative_to(path).as_posix()
        part = _collect(event_files(sub), f"{main.name}/{rel}", key=rel)
        if part.series:
            runs.append(_finish(part))
        elif isinstance(part.config.get("hparams"), dict):
            # torch's add_hparams() writes into a subfolder of the run it describes.
            main.config.setdefault("hparams", {}).update(part.config["hparams"])
            main.sources.extend(part.sources)
        else:
            main.warnings.append(f"{rel}/ skipped: {_no_scalars(part)}")
    if main.series or not runs:
        runs.insert(0, _finish(main))
    return runs


def read_files(files: list[Path], name: str) -> RunLog:
    """One run from event files written one after the other."""
    return _finish(_collect(files, name))


def event_files(folder: Path) -> list[Path]:
    """The event files directly in ``folder``, in the order they were created."""
    try:
        names = [e.name for e in os.scandir(folder) if e.is_file() and EVENT_FILE.match(e.name)]
    except OSError:
        return []
    return [folder / n for n in sorted(names, key=_creation_key)]


def _creation_key(name: str) -> list[tuple[int, str]]:
    # events.out.tfevents.<unix time>.<host>[.<pid>.<n>]: the time, then the writer's counter.
    return [(int(part), "") if part.isdigit() else (-1, part) for part in name.split(".")]


def _subruns(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if Path(root) != folder and any(EVENT_FILE.match(f) for f in files):
            found.append(Path(root))
    return found


def run_name(folder: Path) -> str:
    """``out/runs/Apr25_host`` (HF) is "out/Apr25_host"; ``job/tensorboard`` is "job"."""
    if folder.name.lower() in GENERIC_DIRS and folder.parent.name:
        return folder.parent.name
    if folder.parent.name == "runs" and folder.parent.parent.name:
        return f"{folder.parent.parent.name}/{folder.name}"
    return folder.name or "tensorboard"


def _collect(files: list[Path], name: str, key: str = "") -> RunLog:
    run = RunLog(format="tensorboard", name=name, sources=list(files), key=key)
    scalars = _read_files(files, run)
    resumes, counters, warnings = find_resumes(scalars.backs())
    if resumes:  # read again, dropping the points each resume replaced
        scalars = _read_files(files, RunLog(format="tensorboard", name=name), (resumes, counters))
    for tag in scalars.tags():
        series = scalars.builders[tag].build(tag)
        if not _summary_value(run, tag, series) and not _placeholder(tag, series):
            run.add(series)
    run.events.extend(events(resumes))
    run.warnings.extend(warnings)
    return run


def _finish(run: RunLog) -> RunLog:
    if not run.series:
        raise ReaderError(_no_scalars(run))
    _fill_shape(run)
    return run


def _read_files(files: list[Path], run: RunLog, drop: tuple[list[Rewind], set[str]] | None = None
                ) -> _Scalars:
    scalars = _Scalars(drop)
    for path in files:
        if path.stat().st_size == 0:  # writers leave these when a job dies at once
            run.warnings.append(f"{path.name}: empty event file, skipped")
            continue
        _read_file(path, scalars, run)
    return scalars


def _read_file(path: Path, scalars: _Scalars, run: RunLog) -> None:
    """Add one event file a block at a time: simple scalars decoded at once, any other record
    by protobuf."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    with open_regular(path) as f:
        records = FileRecords(f)
        for data, block, first in _named(path, records):
            fast = decode(data, block.offsets, block.lengths)
            for index in np.flatnonzero(~fast.matched).tolist():
                start = int(block.offsets[index])
                try:
                    event = Event.FromString(data[start : start + int(block.lengths[index])])
                except DecodeError:
                    raise ReaderError(f"{path.name}: record {first + index + 1:,} is not a "
                                      "TensorBoard event") from None
                if event.summary.value:
                    scalars.add(event, scalars.records + index, run)
                elif event.file_version and run.started is None:
                    run.started = datetime.fromtimestamp(event.wall_time, UTC)
            scalars.add_block(fast)
            scalars.records += len(block)
    if records.incomplete_at is not None:
        run.warnings.append(f"{path.name}: the last record is incomplete (still being written?); "
                            f"read up to byte {records.incomplete_at:,}")


def _named(path: Path, records: FileRecords):
    """The file's blocks, a damaged one named by the file."""
    try:
        yield from records
    except ReaderError as err:
        raise ReaderError(f"{path.name}: {err}") from None


class _Scalars:
    """Points per tag in record order across the run's files, a block at a time: spooled, with
    the steps that go back noted (or, on a second pass, the points resumes replaced dropped)."""

    def __init__(self, drop: tuple[list[Rewind], set[str]] | None = None) -> None:
        self.spool = Spool()
        self.builders: dict[str, Builder] = {}
        self.drop = drop
        self._backs: dict[str, Backs] = {}
        # Tags in the order the two paths first met them: bulk-decoded ones lead.
        self._decoded: dict[str, None] = {}
        self._parsed_tags: dict[str, None] = {}
        # The block's points from records the protobuf parser read: steps, wall times, values,
        # record numbers.
        self.parsed: dict[str, tuple[array, array, array, array]] = {}
        self.plugins: dict[str, str] = {}  # TF2 writes a tag's metadata with its first value only
        self.records = 0

    def tags(self) -> list[str]:
        return [*self._decoded, *(t for t in self._parsed_tags if t not in self._decoded)]

    def backs(self) -> dict[str, Backs]:
        return {tag: self._backs[tag] for tag in self.tags()}

    def add_block(self, scalars: Scalars) -> None:
        """The block's points: those decoded in bulk, merged with those parsed one by one."""
        positions = self.records + np.flatnonzero(scalars.matched)
        order = np.argsort(scalars.tag_ids, kind="stable")
        bounds = np.searchsorted(scalars.tag_ids[order], np.arange(len(scalars.tags) + 1))
        parts: dict[str, list[Points]] = {}
        for i, tag in enumerate(scalars.tags):
            rows = order[bounds[i] : bounds[i + 1]]
            parts[tag] = [Points(scalars.steps[rows], scalars.values[rows], scalars.wall_time[rows],
                                 positions[rows])]
            self._decoded.setdefault(tag)
        for tag, (steps, walls, values, records) in self.parsed.items():
            parts.setdefault(tag, []).append(Points(
                np.frombuffer(steps, np.int64), np.frombuffer(values, np.float64),
                np.frombuffer(walls, np.float64), np.frombuffer(records, np.int64)))
            self._parsed_tags.setdefault(tag)
        self.parsed = {}
        for tag, points in parts.items():
            self._take(tag, _concat(points))

    def _take(self, tag: str, points: Points) -> None:
        if self.drop is None:
            self._backs.setdefault(tag, Backs()).add(points)
        elif tag not in self.drop[1]:
            points = drop_orphans(points, self.drop[0])
        builder = self.builders.get(tag) or self.builders.setdefault(tag, self.spool.builder(True))
        builder.append(points.steps, points.values, points.wall_time)

    def add(self, event, position: int, run: RunLog) -> None:
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                self._append(value.tag, event, value.simple_value, position)
            elif kind == "tensor" or value.HasField("metadata"):
                self._tensor(value, event, position, run)

    def _append(self, tag: str, event, number: float, position: int) -> None:
        column = self.parsed.get(tag)
        if column is None:
            column = self.parsed[tag] = (array("q"), array("d"), array("d"), array("q"))
        column[0].append(event.step)
        column[1].append(event.wall_time)
        column[2].append(number)
        column[3].append(position)

    def _tensor(self, value, event, position: int, run: RunLog) -> None:
        plugin = value.metadata.plugin_data.plugin_name or self.plugins.get(value.tag, "")
        self.plugins.setdefault(value.tag, plugin)
        if plugin == "scalars":
            from tensorboard.util.tensor_util import make_ndarray

            number = make_ndarray(value.tensor)
            if number.size == 1:
                self._append(value.tag, event, float(number.reshape(-1)[0]), position)
        elif plugin == "text" or value.tag.endswith(TEXT_SUFFIX):
            _add_text(run, value)
        elif value.tag == HPARAMS_TAG:
            _add_hparams(run, value.metadata.plugin_data.content)


def _concat(parts: list[Points]) -> Points:
    if len(parts) == 1:
        return parts[0]
    merged = Points(*(np.concatenate([getattr(p, f) for p in parts])
                      for f in ("steps", "values", "wall_time", "positions")))
    if np.all(merged.positions[1:] > merged.positions[:-1]):
        return merged
    return merged.take(np.argsort(merged.positions, kind="stable"))


def _add_text(run: RunLog, value) -> None:
    """``args/text_summary`` holding JSON becomes ``config["args"]``; a plain string, its value."""
    strings = value.tensor.string_val
    if not strings:
        return
    key = value.tag.removesuffix(TEXT_SUFFIX)
    run.config.setdefault(key, _literal(strings[0].decode("utf-8", errors="replace")))


def _literal(text: str) -> Any:
    """JSON objects, Python literals (Megatron writes ``str(value)``: "None", "True", "8"), or the text."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _add_hparams(run: RunLog, content: bytes) -> None:
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    hparams = HParamsPluginData.FromString(content).session_start_info.hparams
    values = {}
    for key, proto in hparams.items():
        kind = proto.WhichOneof("kind")
        if kind in ("number_value", "string_value", "bool_value"):
            values[key] = getattr(proto, kind)
    run.config.setdefault("hparams", {}).update(values)


def _summary_value(run: RunLog, tag: str, series: Series) -> bool:
    """HF's end-of-training figures (``train/train_runtime``...) are run totals, not curves."""
    key = tag.removeprefix("train/")
    if tag.startswith("train/") and key in SUMMARY_KEYS and len(series) == 1:
        run.summary[key] = float(series.values[0])
        return True
    return False


def _placeholder(tag: str, series: Series) -> bool:
    """Lightning logs ``hp_metric = -1`` so TensorBoard's hparams tab shows the run at all."""
    return tag == "hp_metric" and bool(np.all(series.values == -1))


def _fill_shape(run: RunLog) -> None:
    config = run.config
    if isinstance(config.get("args"), dict):
        run.shape.update(args_fields(config["args"]), "args/text_summary")
    if isinstance(config.get("model_config"), dict):
        run.shape.update(model_fields(config["model_config"]), "model_config/text_summary",
                         overwrite=False)
        run.shape.set("framework", "transformers", "model_config/text_summary", overwrite=False)
    flat = {k: v for k, v in config.items() if not isinstance(v, dict)}
    if "tensor_model_parallel_size" in flat:  # Megatron writes each argument as a text summary
        run.shape.update(args_fields(flat), "Megatron arguments (text summaries)", overwrite=False)
        run.shape.set("framework", "megatron", "Megatron arguments (text summaries)", overwrite=False)
    if isinstance(config.get("hparams"), dict):
        run.shape.update(args_fields(config["hparams"]), "hparams plugin", overwrite=False)


def _no_scalars(run: RunLog) -> str:
    if run.config:
        kinds = ", ".join(sorted(run.config)[:3]) + (", ..." if len(run.config) > 3 else "")
        return f"no scalar data: the run wrote only text or hparams summaries ({kinds})"
    if run.started is not None:
        return "no scalar data: the run wrote only the file header"
    return "no scalar data: no events in the file"
