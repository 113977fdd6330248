"""GPU samplers: ``nvidia-smi --query-gpu=... --format=csv`` output and per-GPU JSON-lines samplers.

Both sample the driver's view of each device on a clock, apart from the
training loop, so a sample's step is its number and its wall time says when.
Each device's memory becomes ``mem_used_gib/gpu<N>`` and the busiest device at
each sample ``mem_used_gib`` (the one that decides whether a run fits);
utilisation, power and temperature are kept per device.

- CSV: the header names the fields and their units (``memory.used [MiB]``;
  with ``nounits`` the unit is nvidia-smi's default, MiB). Without a header the
  columns cannot be known, so such files are not claimed.
- JSON lines: ``{"timestamp": ..., "gpus": [{"gpu_id": 0, "mem_used_mb": ..., ...}]}``
  (one object per sample) or one object per device and sample with a ``gpu`` index.
  nvidia-smi's "MB" are MiB.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from core.metrics import MEMORY_UNITS
from core.runlog import RunLog
from tracker.readers._common import ReaderError, file_run_name, head, number, one_run
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers._system import Samples, add_samples
from tracker.readers._tabular import jsonl_rows

SOURCE = "GPU sampler"
_CSV_MEMORY = re.compile(r"^memory\.used(?: \[(?P<unit>\w+)\])?$")
_CSV_FIELDS = {"utilization.gpu": "gpu_util_pct", "power.draw": "power_w",
               "temperature.gpu": "temp_c"}
_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S",
                 "%Y-%m-%dT%H:%M:%S")
_DEVICE_KEYS = ("gpu_id", "gpu", "index", "device", "gpu_index")
_TIME_KEYS = ("timestamp", "time", "ts", "wall_time")
# JSON field name -> bytes per unit, for a device's used memory.
_JSON_MEMORY = {"mem_used_mb": MEMORY_UNITS["mib"], "memory_used_mb": MEMORY_UNITS["mib"],
                "mem_used_mib": MEMORY_UNITS["mib"], "memory_used_mib": MEMORY_UNITS["mib"],
                "mem_used_gib": MEMORY_UNITS["gib"], "memory_used_gib": MEMORY_UNITS["gib"],
                "mem_used_bytes": 1.0, "memory_used": MEMORY_UNITS["mib"],
                "memory.used": MEMORY_UNITS["mib"]}
_JSON_TOTAL = {"mem_total_mb": MEMORY_UNITS["mib"], "memory_total_mb": MEMORY_UNITS["mib"],
               "mem_total_mib": MEMORY_UNITS["mib"], "memory.total": MEMORY_UNITS["mib"]}
_JSON_FIELDS = {"util_pct": "gpu_util_pct", "utilization": "gpu_util_pct",
                "gpu_util": "gpu_util_pct",
                "power_w": "power_w", "temp_c": "temp_c", "temperature": "temp_c"}


def sniff(sample: Sample) -> float:
    first = sample.text[:4096].split("\n", 1)[0]
    csv_like = sample.suffix in (".csv", ".txt", ".log", "")
    if csv_like and "memory.used" in first and "," in first:
        return Confidence.LIKELY
    if first.lstrip().startswith("{") and '"gpus"' in first and "mem" in first:
        return Confidence.LIKELY
    return Confidence.NONE


def read(path: Path) -> RunLog:
    if head(path, 1).startswith(b"{"):
        samples, totals = _jsonl_samples(path)
    else:
        samples, totals = _csv_samples(path)
    if not len(samples.wall):
        raise ReaderError("no GPU samples in this file")
    run = RunLog(format="gpu_sampler", name=file_run_name(path))
    add_samples(run, samples)
    if totals:
        run.shape.set("gpu_mem_gib", round(max(totals) / MEMORY_UNITS["gib"], 2), SOURCE)
    run.shape.set("n_gpus", len(samples.device_bytes) or None, SOURCE)
    run.config["step"] = "sample number (see the wall time)"
    return run


def _jsonl_samples(path: Path) -> tuple[Samples, list[float]]:
    rows: list[tuple[float, dict[str, float]]] = []
    used: dict[int, list[float]] = {}
    totals: list[float] = []
    for row in jsonl_rows(path.read_bytes()):
        devices = row.get("gpus") if isinstance(row.get("gpus"), list) else [row]
        values: dict[str, float] = {}
        for device in devices:
            if isinstance(device, dict):
                _json_device(device, len(rows), values, used, totals)
        rows.append((_time(row), values))
    return _samples(rows, used), totals


def _json_device(device: dict[str, Any], index: int, values: dict[str, float],
                 used: dict[int, list[float]], totals: list[float]) -> None:
    gpu = next((int(device[k]) for k in _DEVICE_KEYS if number(device.get(k)) is not None), 0)
    for key, scale in _JSON_MEMORY.items():
        if number(device.get(key)) is not None:
            column = used.setdefault(gpu, [])
            column.extend([np.nan] * (index - len(column)))
            column.append(number(device[key]) * scale)
            break
    for key, scale in _JSON_TOTAL.items():
        if number(device.get(key)) is not None:
            totals.append(number(device[key]) * scale)
            break
    for key, name in _JSON_FIELDS.items():
        if number(device.get(key)) is not None:
            values[f"{name}/gpu{gpu}"] = number(device[key])


def _csv_samples(path: Path) -> tuple[Samples, list[float]]:
    """nvidia-smi's CSV: a row per device and sample; a sample is the rows of one timestamp."""
    rows: list[tuple[float, dict[str, float]]] = []
    used: dict[int, list[float]] = {}
    totals: list[float] = []
    with open(path, newline="", errors="replace") as f:
        reader = csv.reader(f, skipinitialspace=True)
        header = [h.strip() for h in next(reader, [])]
        columns = _csv_columns(header)
        stamp = None
        for record in reader:
            if len(record) != len(header) or record == header:
                continue
            if record[columns["time"]] != stamp or not rows:
                stamp = record[columns["time"]]
                rows.append((_time({"timestamp": stamp}), {}))
            _csv_device(record, columns, len(rows) - 1, rows[-1][1], used, totals)
    return _samples(rows, used), totals


def _csv_columns(header: list[str]) -> dict[str, Any]:
    columns: dict[str, Any] = {"time": 0, "index": None, "used": None, "scale": MEMORY_UNITS["mib"],
                               "total": None, "fields": {}}
    for i, name in enumerate(header):
        memory = _CSV_MEMORY.match(name)
        if memory is not None:
            columns["used"], unit = i, (memory["unit"] or "MiB").lower()
            columns["scale"] = MEMORY_UNITS.get(unit, MEMORY_UNITS["mib"])
        elif name.startswith("memory.total"):
            columns["total"] = i
        elif name == "index":
            columns["index"] = i
        elif name == "timestamp":
            columns["time"] = i
        elif name.split(" [")[0] in _CSV_FIELDS:
            columns["fields"][i] = _CSV_FIELDS[name.split(" [")[0]]
    if columns["used"] is None:
        raise ReaderError("no memory.used column in this nvidia-smi CSV")
    return columns


def _csv_device(record: list[str], columns: dict[str, Any], index: int, values: dict[str, float],
                used: dict[int, list[float]], totals: list[float]) -> None:
    gpu = int(record[columns["index"]]) if columns["index"] is not None else 0
    memory = _leading_number(record[columns["used"]])
    if memory is not None:
        column = used.setdefault(gpu, [])
        column.extend([np.nan] * (index - len(column)))
        column.append(memory * columns["scale"])
    if columns["total"] is not None:
        total = _leading_number(record[columns["total"]])
        if total is not None:
            totals.append(total * columns["scale"])
    for i, name in columns["fields"].items():
        value = _leading_number(record[i])
        if value is not None:
            values[f"{name}/gpu{gpu}"] = value


def _leading_number(text: str) -> float | None:
    """``'1234 MiB'`` or ``'35 %'`` as a number; ``[N/A]`` as None."""
    return number(text.split(" ")[0]) if text.strip() else None


def _samples(rows: list[tuple[float, dict[str, float]]], used: dict[int, list[float]]) -> Samples:
    samples = Samples.from_rows(rows)
    for gpu, column in used.items():
        column.extend([np.nan] * (len(rows) - len(column)))
        samples.device_bytes[gpu] = np.asarray(column, dtype=np.float64)
    return samples


def _time(row: dict[str, Any]) -> float:
    """A sample's POSIX time: a number, or nvidia-smi's ``2024/05/01 12:00:00.123`` (else NaN)."""
    value = next((row[k] for k in _TIME_KEYS if k in row), None)
    if number(value) is not None:
        return number(value)
    if isinstance(value, str):
        for fmt in _TIME_FORMATS:
            try:
                return datetime.strptime(value.strip(), fmt).timestamp()
            except ValueError:
                pass
    return float("nan")


read_runs = one_run(read)  # the reader interface (tracker.readers)
