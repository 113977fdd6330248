"""Lightning ``lightning_logs/version_N`` folders: ``metrics.csv``, ``hparams.yaml``, events.

``CSVLogger`` writes one row per ``log_metrics`` call with the sorted union of
all keys as columns, so train, validation and learning-rate rows alternate with
empty cells; each column becomes a series at the rows that hold a value. When
``TensorBoardLogger`` wrote into the same folder, its events carry the same
metrics with wall times: a metric present in both is kept once, from the file
that holds more of its points (TensorBoard on a tie, for the wall times).
``hparams.yaml`` becomes the config and states what it can of the run's shape.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from core.runlog import RunLog, Series
from core.train_args import shape_fields
from tracker.readers import tensorboard
from tracker.readers._common import ReaderError, head_text, load_yaml, one_run
from tracker.readers._restarts import Points, untangle
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._tabular import Column, csv_columns

CSV = "metrics.csv"
HPARAMS = "hparams.yaml"
_VERSION = re.compile(r"^version_\d+$")


def sniff(sample: Sample) -> float:
    path = sample.path
    if sample.is_dir:
        if (path / CSV).is_file():
            return Confidence.STRONG if _written_by_lightning(path / CSV) else Confidence.NONE
        if (path / HPARAMS).is_file() and (_VERSION.match(path.name) or tensorboard.event_files(path)):
            return Confidence.LIKELY  # outranks the TensorBoard folder reader: hparams.yaml says Lightning
        return Confidence.NONE
    return Confidence.LIKELY if path.name == CSV and _written_by_lightning(path) else Confidence.NONE


def _written_by_lightning(csv: Path) -> bool:
    """A step column, and the epoch column Lightning adds, hparams.yaml, or a version_N folder.

    Plain ``metrics.csv`` files from other scripts are left to the generic CSV reader.
    """
    header = head_text(csv, 4096).split("\n", 1)[0].strip().split(",")
    if "step" not in header:
        return False
    return "epoch" in header or (csv.parent / HPARAMS).is_file() or bool(_VERSION.match(csv.parent.name))


def read(path: Path) -> RunLog:
    folder = path if path.is_dir() else path.parent
    run = RunLog(format="lightning", name=run_name(folder))
    if (folder / CSV).is_file():
        _add_csv(run, folder / CSV)
    if (folder / HPARAMS).is_file():
        _add_hparams(run, folder / HPARAMS)
    if path.is_dir() and tensorboard.event_files(folder):
        _add_events(run, tensorboard.event_files(folder))
    if not run.series:
        raise ReaderError(_nothing_logged(folder))
    run.shape.set("framework", "lightning", "folder layout", overwrite=False)
    return run


def run_name(folder: Path) -> str:
    """``project/lightning_logs/version_3`` is "project/version_3" (every run's folder is a
    version_N); a folder the user named is named alone (``runs/tiny-lm`` is "tiny-lm")."""
    if not _VERSION.match(folder.name):
        return folder.name
    parent = folder.parent
    if parent.name == "lightning_logs" and parent.parent.name:
        parent = parent.parent
    return f"{parent.name}/{folder.name}" if parent.name else folder.name


def _add_csv(run: RunLog, path: Path) -> None:
    columns = csv_columns(path)
    if not columns:  # a header alone: pyarrow types every column as null
        raise ReaderError(f"no metrics: {CSV} has a header but no rows")
    steps = columns.pop("step", None)
    if steps is None:
        raise ReaderError(f"{CSV} has no step column")
    found = {name: _points(col, steps, epoch=name == "epoch") for name, col in columns.items()}
    kept, events, warnings = untangle({k: v for k, v in found.items() if len(v.steps)})
    for name, points in kept.items():
        run.add_series(name, points.steps, points.values)
    run.events.extend(events)
    run.warnings.extend(warnings)
    run.sources.append(path)


def _points(col: Column, steps: Column, epoch: bool) -> Points:
    """A column's points: the rows where it and the step have a value."""
    rows = np.flatnonzero(col.present & steps.present)
    if epoch:
        rows = rows[_last_per_step(steps.values[rows])]
    return Points(steps.values[rows].astype(np.int64), col.values[rows], positions=rows)


def _last_per_step(steps: np.ndarray) -> np.ndarray:
    """Lightning adds the epoch to every logged row: one point per step is the curve."""
    return np.append(steps[1:] != steps[:-1], True) if len(steps) else np.ones(0, dtype=bool)


def _add_events(run: RunLog, files: list[Path]) -> None:
    try:
        events = tensorboard.read_files(files, run.name)
    except ReaderError as err:
        run.warnings.append(f"TensorBoard events not used: {err}")
        return
    by_original = {s.original: s for s in run.series.values()}
    for series in events.series.values():
        if series.original == "epoch":
            series = _take(series, _last_per_step(series.steps))
        _merge(run, by_original.get(series.original), series)
    if not run.events:  # both loggers saw the same resumes
        run.events.extend(events.events)
    run.started = events.started
    run.warnings.extend(events.warnings)
    run.sources.extend(files)
    for key, value in events.config.get("hparams", {}).items():
        run.config.setdefault(key, value)  # hparams.yaml, read first, wins
    run.shape.merge(events.shape)


def _take(series: Series, keep: np.ndarray) -> Series:
    wall = None if series.wall_time is None else series.wall_time[keep]
    return Series(series.name, series.steps[keep], series.values[keep], series.original, wall)


def _merge(run: RunLog, from_csv: Series | None, from_events: Series) -> None:
    """Keep one copy of a metric both loggers wrote: the longer, TensorBoard's on a tie."""
    if from_csv is None:
        name = from_events.name if from_events.name not in run.series else from_events.original
        from_events.name = name
        run.series[name] = from_events
    elif len(from_events) >= len(from_csv):
        from_events.name = from_csv.name
        run.series[from_csv.name] = from_events


def _add_hparams(run: RunLog, path: Path) -> None:
    """The run's hyperparameters; a damaged or hostile file costs them, not the run."""
    try:
        data = load_yaml(path)
    except ReaderError as err:
        run.warnings.append(f"{path.name} skipped: {err}")
        return
    run.sources.append(path)
    if not isinstance(data, dict):
        return
    run.config.update(data)
    run.shape.update(shape_fields(data), HPARAMS, overwrite=False)


def _nothing_logged(folder: Path) -> str:
    if (folder / CSV).is_file():
        return f"no metrics: {CSV} holds no metric values"
    if (folder / HPARAMS).is_file():
        try:
            empty = not load_yaml(folder / HPARAMS)
        except ReaderError:
            empty = False
        what = f"an empty {HPARAMS}" if empty else HPARAMS
        return f"no metrics: the folder holds only {what} (the run stopped before logging)"
    return f"no metrics: no {CSV} and no TensorBoard events"


read_runs = one_run(read)  # the reader interface (tracker.readers)
