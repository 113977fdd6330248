"""ms-swift: ``logging.jsonl`` with the ``args.json`` and DeepSpeed/FSDP config beside it.

Each line is a trainer log row (``loss``, ``grad_norm``, ``learning_rate``,
``token_acc``, ``'global_step/max_steps': '1/294'``, ``elapsed_time`` as ``'1m 60s'``,
``tokens_per_gpu_per_sec``, ``tokens_global_per_sec``, ``memory(GiB)`` = the
peak reserved memory, ``train_speed(s/it)``; older versions
``train_speed(iter/s)``); the final summary row is followed by one line with
the model's parameter counts and the whole ``log_history``. ``args.json`` gives
the shape; a DeepSpeed or FSDP config JSON in the same folder gives ZeRO and
offload when the arguments do not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.runlog import PointTable, RunLog
from tracker.readers._common import ReaderError, file_run_name, load_json, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._tabular import jsonl_rows
from tracker.readers._trainer_rows import parameter_info, parse_row, trainer_shape

LOG = "logging.jsonl"
ARGS = "args.json"
_MARKER = b'"global_step/max_steps"'


def sniff(sample: Sample) -> float:
    first = sample.head[:8192].split(b"\n", 1)[0]
    if first.lstrip().startswith(b"{") and _MARKER in first:
        return Confidence.STRONG if sample.path.name == LOG else Confidence.LIKELY
    return Confidence.NONE


def read(path: Path) -> RunLog:
    run = RunLog(format="ms_swift", name=file_run_name(path))
    points = PointTable()
    for row in jsonl_rows(path.read_bytes()):
        if "log_history" in row or "model_parameter_info" in row:
            _add_final(run, row)
            continue
        parsed = parse_row(row)
        if parsed.kind == "summary":
            run.summary.update(parsed.metrics)
        elif parsed.step is not None:
            points.add(parsed.step, parsed.metrics)
            if parsed.total_steps:
                run.config["max_steps"] = parsed.total_steps
    points.into(run)
    if not run.series and not run.summary:
        raise ReaderError("no logged steps in this ms-swift log")
    if "mem_reserved_gib" in run.series:
        run.config["memory_peaks"] = {"mem_reserved_gib": "cumulative"}
    _add_args(run, path.parent)
    run.shape.set("framework", "ms-swift", LOG, overwrite=False)
    return run


def _add_final(run: RunLog, row: dict[str, Any]) -> None:
    """The line after the summary: parameter counts, the peak memory, the best checkpoint."""
    info = str(row.get("model_parameter_info", ""))
    run.shape.update(parameter_info(info), "model_parameter_info")
    if isinstance(row.get("memory"), (int, float)):
        run.summary["mem_reserved_gib_max"] = row["memory"]
    for key in ("best_model_checkpoint", "last_model_checkpoint", "best_metric"):
        if row.get(key) is not None:
            run.config[key] = row[key]


def _add_args(run: RunLog, folder: Path) -> None:
    args_path = folder / ARGS
    args = load_json(args_path) if args_path.is_file() else None
    if isinstance(args, dict):
        run.config["args"] = {k: v for k, v in args.items() if isinstance(v, (int, float, str))}
        run.shape.update(_swift_shape(args), ARGS)
        run.sources.append(args_path)
    for config_path, config in _configs_beside(folder):
        source = config_path.name
        if "zero_optimization" in config:
            run.shape.update(trainer_shape({"deepspeed": config}), source, overwrite=False)
        elif "fsdp" in config:
            run.shape.update(trainer_shape(config), source, overwrite=False)
        run.sources.append(config_path)


def _swift_shape(args: dict[str, Any]) -> dict[str, Any]:
    """Shape fields of ms-swift's arguments: the HF ones, plus its own names."""
    out = trainer_shape(args)
    if isinstance(args.get("model"), str):
        out.setdefault("model", args["model"])
    attention = str(args.get("attn_impl") or "")
    if attention.startswith("flash"):
        out["attention"] = "flash"
    elif attention in ("sdpa", "eager"):
        out["attention"] = attention
    if isinstance(args.get("global_world_size"), int):
        out["n_gpus"] = args["global_world_size"]
    return out


def _configs_beside(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """DeepSpeed and FSDP config JSONs in the run folder (small files only)."""
    found = []
    for path in sorted(folder.glob("*.json")):
        if path.name == ARGS or path.stat().st_size > 256 * 1024:
            continue
        try:
            config = json.loads(path.read_text(errors="replace"))
        except ValueError:
            continue
        if isinstance(config, dict) and ("zero_optimization" in config or "fsdp" in config):
            found.append((path, config))
    return found


read_runs = one_run(read)  # the reader interface (tracker.readers)
