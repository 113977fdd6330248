"""Megatron-LM's "golden values": the metric series its CI records, and the test's model config.

``golden_values_<env>.json`` maps each metric (``lm loss``, ``mem-allocated-bytes``,
``mem-max-allocated-bytes``, ``iteration-time``, ``num-zeros``) to ``{start_step,
end_step, step_interval, values: {"<step>": value}}``; a ``"nan"`` string marks a
step that was not measured (iteration time at step 1) and is left out. The
``model_config.yaml`` beside it holds the Megatron arguments (``MODEL_ARGS:
--num-layers: 32 ...``) that give the run's shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from core.metrics import GIB
from core.runlog import RunLog
from tracker.readers._common import ReaderError, load_json, load_yaml, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers.text.megatron import megatron_shape

CONFIG = "model_config.yaml"
# Names the alias table does not know, with their scale to canonical units.
_NAMES = {"mem-allocated-bytes": ("mem_allocated_now_gib", 1 / GIB)}


def sniff(sample: Sample) -> float:
    text = sample.text[:2048]
    found = all(key in text for key in ('"start_step"', '"step_interval"', '"values"'))
    return Confidence.LIKELY if found else Confidence.NONE


def read(path: Path) -> RunLog:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ReaderError("not a golden-values file: expected an object of metrics")
    run = RunLog(format="megatron_golden", name=f"{path.parent.name}/{path.stem}")
    for metric, record in data.items():
        steps, values = _points(record)
        if len(steps):
            name, scale = _NAMES.get(metric, (metric, 1.0))
            run.add_series(name, steps, values, scale=scale)
    if not run.series:
        raise ReaderError("no metric in this golden-values file has values")
    if "mem_peak_gib" in run.series:
        run.config["memory_peaks"] = {"mem_peak_gib": "cumulative"}
    _add_config(run, path.parent / CONFIG)
    run.shape.set("framework", "megatron-lm", path.name, overwrite=False)
    return run


def _points(record: Any) -> tuple[np.ndarray, np.ndarray]:
    values = record.get("values") if isinstance(record, dict) else None
    if not isinstance(values, dict):
        return np.empty(0, dtype=np.int64), np.empty(0)
    points = sorted((int(step), float(value)) for step, value in values.items()
                    if str(step).isdigit() and type(value) in (int, float))
    steps = np.array([s for s, _ in points], dtype=np.int64)
    return steps, np.array([v for _, v in points], dtype=np.float64)


def _add_config(run: RunLog, path: Path) -> None:
    if not path.is_file():
        return
    config = load_yaml(path)
    model_args = config.get("MODEL_ARGS") if isinstance(config, dict) else None
    if not isinstance(model_args, dict):
        return
    args = {str(k).lstrip("-").replace("-", "_"): v for k, v in model_args.items()}
    run.config["args"] = args
    run.shape.update(megatron_shape(args), CONFIG)
    run.sources.append(path)


read_runs = one_run(read)  # the reader interface (tracker.readers)
