"""MLflow's file store: ``mlruns/<experiment id>/<run id>/`` folders, one run each.

A run folder holds ``meta.yaml`` (run id, name, start and end times, status),
``metrics/<name>`` files of ``<timestamp ms> <value> <step>`` lines (metric
names with "/" are nested folders), and one file per param and tag. Params
become the run's config and fill the shape fields they name; tags are kept in
the config too. System metrics (``system/gpu_<N>_memory_usage_megabytes``) are
placed on the training steps by their time and give ``mem_used_gib``.

``mlruns/`` and experiment folders are not claimed: the folder walk descends
through them to the run folders.
"""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.hf_config import shape_fields as arch_fields
from core.runlog import RunEvent, RunLog
from core.status import RunStatus
from core.train_args import shape_fields as args_fields
from tracker.readers._common import ReaderError, head_text, load_yaml, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._system import Samples, add_samples

META = "meta.yaml"
PARTS = ("metrics", "params", "tags")
RUN_NAME_TAG = "mlflow.runName"
STATUSES = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
# MLflow's system metrics monitor, GPU memory in decimal megabytes (pynvml used / 1e6).
_DEVICE_MB = re.compile(r"^system/gpu_(\d+)_memory_usage_megabytes$")
MB = 1e6


def sniff(sample: Sample) -> float:
    path = sample.path
    if not sample.is_dir or not (path / META).is_file():
        return Confidence.NONE
    text = head_text(path / META, 8192)
    is_run = re.search(r"^run_(id|uuid):", text, re.MULTILINE) is not None
    return Confidence.STRONG if is_run and any((path / p).is_dir() for p in PARTS) else Confidence.NONE


def read(path: Path) -> RunLog:
    meta = load_yaml(path / META)
    if not isinstance(meta, dict):
        raise ReaderError(f"{META}: not a run description")
    params = _values(path / "params")
    tags = _values(path / "tags")
    run = RunLog(format="mlflow", name=_name(path, meta, tags),
                 started=_time(meta.get("start_time")))
    run.sources = [path / META, *_files(path / "params"), *_files(path / "tags")]
    _add_metrics(run, path / "metrics")
    run.config = {**params, "mlflow": _facts(path, meta, tags)}
    status = run.config["mlflow"]["status"]
    run.status = {"RUNNING": RunStatus.RUNNING, "FINISHED": RunStatus.FINISHED}.get(status, "")
    if status in ("FAILED", "KILLED"):
        run.events.append(RunEvent("exit", None, f"MLflow marked the run {status}",
                                   {"status": status}))
    values = {k.lower(): _typed(v) for k, v in params.items()}  # constants: BATCH_SIZE
    run.shape.update({**arch_fields(values), **args_fields(values)}, "MLflow params")
    if not run.series and not params:
        raise ReaderError("the MLflow run has no metrics and no params")
    return run


def _add_metrics(run: RunLog, folder: Path) -> None:
    """Training metrics as they are; system metrics placed on the training steps by time."""
    system: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for file in _files(folder):
        name = file.relative_to(folder).as_posix()
        wall, values, steps = _metric_file(file, name)
        run.sources.append(file)
        if name.startswith("system/"):
            system[name] = wall, values, steps
        else:
            run.add_series(name, steps, values, wall)
    if system:
        trained = [s for s in run.series.values() if s.wall_time is not None]
        ref = None
        if trained:
            ref = (np.concatenate([s.wall_time for s in trained]),
                   np.concatenate([s.steps for s in trained]))
        add_samples(run, _samples(system), ref)


def _metric_file(file: Path, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wall seconds, values, steps) of one metric file; old two-field lines are step 0."""
    import pyarrow as pa
    import pyarrow.csv as pc

    data = file.read_bytes()
    fields = len(data.split(b"\n", 1)[0].split())
    names = ["timestamp", "value", "step"][:fields]
    try:
        table = pc.read_csv(
            pa.py_buffer(data),
            read_options=pc.ReadOptions(column_names=names),
            parse_options=pc.ParseOptions(delimiter=" "),
            convert_options=pc.ConvertOptions(
                column_types={"timestamp": pa.float64(), "value": pa.float64(), "step": pa.int64()},
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, ValueError) as err:
        if not data.strip():
            raise ReaderError(f"metrics/{name}: empty metric file") from None
        reason = str(err).splitlines()[0].removeprefix("CSV parse error: ")[:120]
        raise ReaderError(
            f"metrics/{name}: expected 'timestamp value step' lines ({reason})") from None
    wall = table.column("timestamp").to_numpy() / 1000.0
    steps = table.column("step").to_numpy() if fields == 3 else np.zeros(len(wall), dtype=np.int64)
    return wall, table.column("value").to_numpy(), steps


def _samples(system: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Samples:
    """System metrics as one table of samples, aligned on MLflow's sample counter (their step)."""
    ids = np.unique(np.concatenate([steps for _, _, steps in system.values()]))
    samples = Samples(np.full(len(ids), np.nan))
    for name, (wall, values, steps) in system.items():
        rows = np.searchsorted(ids, steps)
        column = np.full(len(ids), np.nan)
        column[rows] = values
        samples.wall[rows] = np.fmin(samples.wall[rows], wall)
        match = _DEVICE_MB.match(name)
        if match:
            samples.device_bytes[int(match[1])] = column * MB
        else:
            samples.columns[name] = column
    return samples


def _values(folder: Path) -> dict[str, str]:
    """Param or tag files: name (nested folders joined with "/") -> text."""
    # Not read_text: MLflow writes an empty param as an empty file, which is a value here.
    return {
        f.relative_to(folder).as_posix(): f.read_text(encoding="utf-8", errors="replace").strip()
        for f in _files(folder)
    }


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _name(path: Path, meta: dict[str, Any], tags: dict[str, str]) -> str:
    return tags.get(RUN_NAME_TAG) or meta.get("run_name") or meta.get("name") or path.name[:8]


def _facts(path: Path, meta: dict[str, Any], tags: dict[str, str]) -> dict[str, Any]:
    """Run identity, status and tags as MLflow recorded them."""
    experiment = load_yaml(path.parent / META) if (path.parent / META).is_file() else None
    return {
        "run_id": meta.get("run_id") or meta.get("run_uuid"),
        "experiment_id": meta.get("experiment_id"),
        "experiment": experiment.get("name") if isinstance(experiment, dict) else None,
        "status": STATUSES.get(meta.get("status"), meta.get("status")),
        "lifecycle_stage": meta.get("lifecycle_stage"),
        "user": meta.get("user_id"),
        "end_time": _iso(_time(meta.get("end_time"))),
        "tags": tags,
    }


def _typed(text: str) -> Any:
    """MLflow keeps each param as ``str(value)``: "16", "True", "None", "['c_attn']"."""
    try:
        return ast.literal_eval(text)  # literals only: nothing is executed
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def _time(ms: Any) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000.0, UTC) if isinstance(ms, (int, float)) and ms else None


read_runs = one_run(read)  # the reader interface (tracker.readers)
