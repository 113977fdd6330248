"""Weights & Biases run folders: ``run-*/``, ``offline-run-*/``, ``latest-run/``, their ``files/``.

A folder is one run, put together from what each file states:

- ``run-<id>.wandb``, the transaction log: history, system metrics (per-GPU
  memory becomes ``mem_used_gib``), config, summary, host. Modern offline runs
  keep everything here; reading it needs the optional ``wandb`` package.
- ``files/wandb-history.jsonl`` (older clients): history rows with ``_step``,
  ``_runtime`` and ``_timestamp``.
- ``files/wandb-summary.json``: final values, the run's summary (a run with only
  a summary is still a run).
- ``files/config.yaml``: W&B's ``key: {desc, value}`` layout; HF
  ``TrainingArguments`` and model config keys logged there fill the shape.
- ``files/wandb-metadata.json``: GPU model, count and memory, host, start, program.
- ``files/output.log``: the console, merged in when a console reader claims it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.hf_config import shape_fields as arch_fields
from core.metrics import GIB
from core.runlog import RunEvent, RunLog
from core.status import RunStatus
from core.train_args import shape_fields as args_fields
from tracker.readers._common import ReaderError, load_json, load_yaml, number, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._system import Samples, add_samples
from tracker.readers._table import add_table
from tracker.readers._tabular import (
    Column,
    carried,
    jsonl_columns,
    rows_to_columns,
    wall_column,
)
from tracker.readers._wandb_log import (
    INSTALL_HINT,
    WandbLog,
    flat_numbers,
    is_wandb_log,
    read_log,
)

RUN_DIR = re.compile(r"^(offline-)?run-\d{8}_\d{6}-(?P<id>[a-z0-9]+)$")
HISTORY, SUMMARY, CONFIG, METADATA, OUTPUT = (
    "wandb-history.jsonl", "wandb-summary.json", "config.yaml", "wandb-metadata.json", "output.log",
)
# Files only W&B writes: their presence makes a folder a W&B run.
MARKERS = (HISTORY, SUMMARY, METADATA)
# Step metrics that integrations declare (HF, Lightning) or loops log, before W&B's own _step.
STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step", "step", "iter", "iteration")
_DEVICE_BYTES = re.compile(r"^gpu\.(\d+)\.memoryAllocatedBytes$")
_DEVICE_PERCENT = re.compile(r"^gpu\.(\d+)\.memoryAllocated$")
_PER_CORE = re.compile(r"^cpu\.\d+\.cpu_percent$")  # one series per CPU core: noise, left out
Reference = tuple[np.ndarray, np.ndarray]  # (wall times, steps) of the history rows


@dataclass
class RunFiles:
    """Where one run's files are (any of them may be missing)."""

    root: Path
    log: Path | None = None
    history: Path | None = None
    summary: Path | None = None
    config: Path | None = None
    metadata: Path | None = None
    output: Path | None = None

    def found(self) -> list[Path]:
        return [p for p in (self.log, self.history, self.summary, self.config, self.metadata) if p]


def sniff(sample: Sample) -> float:
    path = sample.path
    if sample.is_dir:
        files = locate(path)
        if not (files.log or any(getattr(files, n) for n in ("history", "summary", "metadata"))):
            return Confidence.NONE
        named = RUN_DIR.match(path.name) or path.name in ("latest-run", "files")
        if not named and len(list(path.glob("*.wandb"))) > 1:
            return Confidence.NONE  # a folder of collected logs: each file is its own run
        return Confidence.STRONG if named else Confidence.PROBABLE
    if path.name in MARKERS:
        return Confidence.LIKELY
    if path.suffix == ".wandb" and is_wandb_log(sample.head[:16]):
        return Confidence.STRONG
    return Confidence.NONE


def locate(path: Path) -> RunFiles:
    """The run's files under a run folder, its ``files/`` folder, or one file given alone."""
    if path.is_file():
        kind = {HISTORY: "history", SUMMARY: "summary", METADATA: "metadata"}.get(path.name, "log")
        return RunFiles(path.parent, **{kind: path})
    in_run = RUN_DIR.match(path.parent.name) or path.parent.name == "latest-run"
    root = path.parent if path.name == "files" and in_run else path
    files_dir = root / "files" if (root / "files").is_dir() else root
    logs = sorted(root.glob("*.wandb"))
    return RunFiles(
        root,
        log=logs[-1] if logs else None,
        **{
            kind: files_dir / name if (files_dir / name).is_file() else None
            for kind, name in (("history", HISTORY), ("summary", SUMMARY), ("config", CONFIG),
                               ("metadata", METADATA), ("output", OUTPUT))
        },
    )


def read(path: Path) -> RunLog:
    files = locate(path)
    if not files.found():
        raise ReaderError("no W&B run files here (wandb-summary.json, config.yaml, run-*.wandb)")
    run = RunLog(format="wandb", name="", sources=files.found())
    log = _transaction_log(files, run)
    config, telemetry = _config(files, log)
    meta = {**log.environment, **(_json(files.metadata) or {})}
    ref = _add_history(run, files, log)
    _add_system(run, log, meta, ref)
    run.summary.update(_summary(files, log))
    _identify(run, files, log, config)
    run.started = _started(log.run, meta, telemetry)
    _add_shape(run, files, config, meta, telemetry)
    run.config.update(config)
    run.config["wandb"] = _facts(log.run, meta, log.exit_code)
    if log.exit_code == 0:
        run.status = RunStatus.FINISHED
    elif log.exit_code:
        run.events.append(RunEvent("exit", None, f"process exited with code {log.exit_code}",
                                   {"exit_code": log.exit_code}))
    _merge_console(run, files.output)
    if not run.series and not run.summary:
        raise ReaderError("the W&B run holds no metrics (no history and no summary)")
    return run


def _transaction_log(files: RunFiles, run: RunLog) -> WandbLog:
    """The decoded .wandb file, or an empty one when there is none or wandb is missing."""
    if files.log is None:
        return WandbLog()
    try:
        log = read_log(files.log)
    except ReaderError as err:
        if str(err) != INSTALL_HINT or len(files.found()) == 1:
            raise ReaderError(f"{files.log.name}: {err}") from None
        run.warnings.append(f"{files.log.name} not read (history and system metrics): {err}")
        return WandbLog()
    run.warnings.extend(f"{files.log.name}: {w}" for w in log.warnings)
    return log


def _config(files: RunFiles, log: WandbLog) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's config and W&B's own ``_wandb`` telemetry entry.

    config.yaml (``{desc, value}`` or ``{value}`` entries) wins over the log's copy.
    """
    config = dict(log.config)
    data = load_yaml(files.config) if files.config else None
    if isinstance(data, dict):
        for key, entry in data.items():
            if isinstance(entry, dict) and "value" in entry:
                config[str(key)] = entry["value"]
    telemetry = config.pop("_wandb", None)
    return config, telemetry if isinstance(telemetry, dict) else {}


def _add_history(run: RunLog, files: RunFiles, log: WandbLog) -> Reference | None:
    """History rows as series; returns their (wall times, steps) for the system metrics."""
    if log.history:
        columns = rows_to_columns(log.history)
    elif files.history is not None:
        columns = jsonl_columns(files.history.read_bytes())
    else:
        return None
    columns.pop("_runtime", None)
    step = next((k for k in STEP_KEYS if k in columns), "_step")
    if step != "_step":
        columns.pop("_step", None)
    if step not in columns or not set(columns) - {step, "_timestamp"}:
        return None
    add_table(run, columns, step=step)
    return _reference(columns, step)


def _reference(columns: dict[str, Column], step: str) -> Reference | None:
    """(wall times, steps) of the history rows, to place clock-sampled metrics on steps."""
    wall_name = wall_column(columns, exclude=step)
    if wall_name is None:
        return None
    steps, wall = carried(columns[step]), columns[wall_name]
    keep = steps.present & wall.present
    return wall.values[keep], steps.values[keep]


def _add_system(run: RunLog, log: WandbLog, meta: dict[str, Any], ref: Reference | None) -> None:
    """System metrics as ``system/<key>``; GPU memory (bytes, or % of total) as mem_used_gib."""
    if not log.stats:
        return
    samples = Samples.from_rows(log.stats)
    totals = [number(d.get("memory_total") or d.get("memoryTotal")) for d in _gpus(meta)]
    for key in list(samples.columns):
        if _PER_CORE.match(key):
            del samples.columns[key]
        elif match := _DEVICE_BYTES.match(key):
            samples.device_bytes[int(match[1])] = samples.columns.pop(key)
    for key, values in samples.columns.items():
        match = _DEVICE_PERCENT.match(key)
        device = int(match[1]) if match else -1
        if match and device not in samples.device_bytes and device < len(totals) and totals[device]:
            samples.device_bytes[device] = values / 100.0 * totals[device]
    add_samples(run, samples, ref, prefix="system/")


def _summary(files: RunFiles, log: WandbLog) -> dict[str, float]:
    data = _json(files.summary) if files.summary else log.summary
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in flat_numbers(data).items() if not k.startswith("_wandb")}


def _identify(run: RunLog, files: RunFiles, log: WandbLog, config: dict[str, Any]) -> None:
    """Key by W&B's run id (``latest-run`` moves on); name as W&B shows it."""
    run_id = log.run.get("run_id") or _folder_id(files.root)
    run.key = run_id or ""
    run.name = (log.run.get("display_name") or _text(config.get("wandb_run_name"))
                or _text(config.get("run_name")) or run_id or _folder_name(files.root))


def _add_shape(run: RunLog, files: RunFiles, config: dict[str, Any], meta: dict[str, Any],
               telemetry: dict[str, Any]) -> None:
    """HF arguments and model config logged as W&B config, GPUs from the metadata."""
    source = files.config.name if files.config else (files.log.name if files.log else "config")
    run.shape.update({**arch_fields(config), **args_fields(config)}, source, overwrite=False)
    _add_gpus(run, meta, files.metadata.name if files.metadata else "W&B environment")
    run.shape.set("framework", _text(telemetry.get("framework")), "W&B telemetry", overwrite=False)


def _add_gpus(run: RunLog, meta: dict[str, Any], source: str) -> None:
    gpus = _gpus(meta)
    model = _text(meta.get("gpu")) or (_text(gpus[0].get("name")) if gpus else None)
    count = number(meta.get("gpu_count") or meta.get("gpuCount")) or len(gpus) or None
    total = number(gpus[0].get("memory_total") or gpus[0].get("memoryTotal")) if gpus else None
    run.shape.set("gpu_model", model, source)
    run.shape.set("n_gpus", int(count) if count else None, f"{source} (GPUs on the host)",
                  overwrite=False)
    run.shape.set("gpu_mem_gib", round(total / GIB, 2) if total else None, source)


def _gpus(meta: dict[str, Any]) -> list[dict[str, Any]]:
    gpus = meta.get("gpu_devices") or meta.get("gpuNvidia") or meta.get("gpu_nvidia") or []
    return [g for g in gpus if isinstance(g, dict)]


def _facts(info: dict[str, Any], meta: dict[str, Any], exit_code: int | None) -> dict[str, Any]:
    """What W&B knows about the run beyond its metrics, kept in the run's config."""
    facts = {k: v for k, v in info.items() if v not in (None, "", []) and k != "start_time"}
    for key in ("host", "program", "args", "python", "os", "git", "cudaVersion", "username"):
        if meta.get(key) not in (None, "", []):
            facts.setdefault(key, meta[key])
    if exit_code is not None:
        facts["exit_code"] = exit_code
    return facts


def _started(info: dict[str, Any], meta: dict[str, Any], telemetry: dict[str, Any],
             ) -> datetime | None:
    """From the run record, else the metadata's startedAt, else the telemetry's start_time."""
    if info.get("start_time"):
        return datetime.fromtimestamp(info["start_time"], UTC)
    text = meta.get("startedAt")
    if isinstance(text, str):
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            when = None
        if when is not None:
            return when if when.tzinfo else when.replace(tzinfo=UTC)  # W&B writes UTC
    stamp = number(telemetry.get("start_time"))
    return datetime.fromtimestamp(stamp, UTC) if stamp else None


def _merge_console(run: RunLog, output: Path | None) -> None:
    """Series that only the console shows (memory lines, throughput) from a console reader."""
    if output is None:
        return
    from tracker.readers import best_reader

    reader = best_reader(output)
    if reader is None or reader.module_name == __name__.rsplit(".", 1)[1]:
        return
    try:
        consoles = reader.read(output)
    except ReaderError as err:
        run.warnings.append(f"{OUTPUT}: {err}")
        return
    for console in consoles:
        for name, series in console.series.items():
            run.series.setdefault(name, series)
    run.sources.append(output)


def _json(path: Path | None) -> Any:
    return load_json(path) if path is not None else None


def _folder_id(root: Path) -> str | None:
    match = RUN_DIR.match(root.name)
    return match["id"] if match else None


def _folder_name(root: Path) -> str:
    """``latest-run`` says nothing: name it after the project folder above ``wandb/``."""
    parent = root.parent.parent if root.parent.name == "wandb" else root.parent
    return f"{parent.name}/{root.name}" if parent.name else root.name


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


read_runs = one_run(read)  # the reader interface (tracker.readers)
