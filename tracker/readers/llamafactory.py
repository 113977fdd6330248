"""LLaMA-Factory's ``trainer_log.jsonl``, with the ``training_args.yaml`` and running log beside it.

``LogCallback`` writes one JSON object per log (``src/llamafactory/train/callbacks.py``):
``current_steps``, ``total_steps``, ``loss``, ``lr``, ``epoch``, ``elapsed_time`` as
``H:MM:SS``, ``throughput`` (input tokens/s since the start) and ``total_tokens``
when tokens are counted (0 otherwise), and ``vram_allocated`` / ``vram_reserved``
(GiB, peaks since the start) only with ``RECORD_VRAM=1``. The YAML gives the
shape (LoRA or full, batch, cutoff length, precision, DeepSpeed); the running
log may hold the crash that ended the run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.runlog import PointTable, RunLog
from tracker.readers._common import file_run_name, load_yaml, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._tabular import jsonl_rows
from tracker.readers._trainer_rows import parse_row, trainer_shape
from tracker.readers.crash import CrashScanner

LOG = "trainer_log.jsonl"
ARGS = "training_args.yaml"
RUNNING_LOG = "running_log.txt"
# Counted only when the run counts tokens; a column of zeros means "not counted".
_TOKEN_METRICS = ("tokens_per_s", "tokens_seen")


def sniff(sample: Sample) -> float:
    first = sample.head[:4096].split(b"\n", 1)[0]
    if not first.lstrip().startswith(b"{"):
        return Confidence.NONE
    if b'"current_steps"' in first and b'"total_steps"' in first:
        return Confidence.STRONG if sample.path.name == LOG else Confidence.LIKELY
    return Confidence.NONE


def read(path: Path) -> RunLog:
    run = RunLog(format="llamafactory", name=file_run_name(path))
    points = PointTable()
    for row in map(parse_row, jsonl_rows(path.read_bytes())):
        if row.total_steps:
            run.config["total_steps"] = row.total_steps
        if row.kind == "summary":
            run.summary.update(row.metrics)
        elif row.step is not None and row.metrics:
            points.add(row.step, row.metrics)
    points.into(run)
    _drop_uncounted(run)
    for name in ("mem_peak_gib", "mem_reserved_gib"):
        if name in run.series:
            run.config.setdefault("memory_peaks", {})[name] = "cumulative"
    _add_args(run, path.parent / ARGS)
    _add_crashes(run, path.parent / RUNNING_LOG)
    run.shape.set("framework", "llamafactory", "trainer_log.jsonl", overwrite=False)
    return run


def _drop_uncounted(run: RunLog) -> None:
    for name in _TOKEN_METRICS:
        series = run.series.get(name)
        if series is not None and not np.any(series.values):
            del run.series[name]


def _add_args(run: RunLog, path: Path) -> None:
    if not path.is_file():
        return
    args = load_yaml(path)
    if isinstance(args, dict):
        run.config["args"] = args
        run.shape.update(trainer_shape(args), ARGS)
        run.sources.append(path)


def _add_crashes(run: RunLog, path: Path) -> None:
    """OOMs and tracebacks in the running log, placed at the last logged step."""
    if not path.is_file():
        return
    from tracker.readers.text._lines import lines

    scanner = CrashScanner()
    last = max((int(s.steps[-1]) for s in run.series.values() if len(s)), default=None)
    for line in lines(path):
        for event in scanner.feed(line.text):
            event.step = last
            run.events.append(event)
    for event in scanner.flush():
        event.step = last
        run.events.append(event)
    run.sources.append(path)


read_runs = one_run(read)  # the reader interface (tracker.readers)
