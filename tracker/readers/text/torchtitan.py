"""torchtitan console logs (``torchtitan/components/metrics.py::MetricsProcessor.log``).

``[titan] 2025-06-01 12:00:00,123 - root - INFO - step: 20  loss: 11.83506  grad_norm:
9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%``, in colour
unless ``--metrics.disable_color_printing``. Older versions print ``loss`` with
four decimals, no ``grad_norm``, ``wps`` instead of ``tps`` (2024) and ``mfu: N/A``
under float8; forks add ``step_time``, ``per_device_tps`` or
``elapsed_time_per_step: 0.123s``. Fields are read by name, so all of these parse.

``memory`` is the **max reserved** memory since the previous line (GiB, peaks
reset after each line), so it is ``mem_reserved_gib`` with per-interval scope.
``tps`` is tokens per second per device in most versions.
"""

from __future__ import annotations

import re

from core.hf_config import shape_fields
from tracker.readers._sniffing import Confidence
from tracker.readers.text import _devices
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._values import NUM, num

SOURCE = "torchtitan log"
_STEP = re.compile(r"\b(?P<validate>validate )?step:\s*(?P<step>\d+)\s+(?P<rest>[a-z_]+:.*)")
_FIELD = re.compile(
    rf"(?P<key>[a-z_]+):\s*(?P<value>{NUM}|N/A|--)(?P<unit>GiB|s|%)?(?:\((?P<pct>{NUM})%\))?"
)
_NAMES = {"memory": "mem_reserved_gib", "tps": "tokens_per_s", "wps": "tokens_per_s",
          "per_device_tps": "tokens_per_s_per_device", "step_time": "step_time_s",
          "elapsed_time_per_step": "step_time_s"}
_MODEL_ARGS = re.compile(r"Building (?P<name>.+?) with \w*ModelArgs\((?P<args>.*)\)")
_ARG = re.compile(r"(\w+)=(-?\d+)\b")
_SIZE = re.compile(r"Model (?P<name>.+?) size: (?P<n>[\d,]+) total parameters")
_CAPACITY = re.compile(
    rf"(?:CUDA|ROCM|GPU|XPU) capacity: (?P<gpu>.+?) with (?P<gib>{NUM})GiB memory"
)
_CHECKPOINTING = re.compile(r"Applied (?P<mode>selective|full)(?: layer)? activation checkpointing")
_MESH = re.compile(r"Building \d+-D device mesh with \[(?P<names>[^\]]*)\], \[(?P<sizes>[^\]]*)\]")
_START = re.compile(r"Starting job: ")


def _step(match: re.Match[str], ctx: Context) -> None:
    metrics = {}
    for field in _FIELD.finditer(match["rest"]):
        key, value = field["key"], field["value"]
        if value in ("N/A", "--"):
            continue
        name = _NAMES.get(key, key)
        if match["validate"]:
            name = "eval_loss" if key == "loss" else f"eval/{name}"
        metrics[name] = num(value)
        if field["pct"] is not None:
            metrics[f"{name}_pct"] = num(field["pct"])
    ctx.runs.point(int(match["step"]), metrics, ctx.wall(), peak=True)
    if "mem_reserved_gib" in metrics:
        ctx.runs.note_scope("mem_reserved_gib", "per-interval")


def _model_args(match: re.Match[str], ctx: Context) -> None:
    args = {key: int(value) for key, value in _ARG.findall(match["args"])}
    ctx.run.shape.update(shape_fields(args), SOURCE)
    ctx.run.shape.set("model", match["name"], SOURCE)


def _size(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("n_params", int(match["n"].replace(",", "")), SOURCE)


def _capacity(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("gpu_model", match["gpu"], SOURCE)
    ctx.run.shape.set("gpu_mem_gib", num(match["gib"]), SOURCE)


def _checkpointing(match: re.Match[str], ctx: Context) -> None:
    # torchtitan's "selective" is its own policy, per op in the configs it ships (recompute
    # every second matmul and the pointwise ops), not attention-only recompute.
    mode = match["mode"]
    ctx.run.shape.set("recompute", "op" if mode == "selective" else mode, SOURCE)


def _mesh(match: re.Match[str], ctx: Context) -> None:
    names = [n.strip().strip("'\"") for n in match["names"].split(",")]
    sizes = [int(s) for s in match["sizes"].split(",") if s.strip().isdigit()]
    mesh = dict(zip(names, sizes, strict=False))
    total = 1
    for size in sizes:
        total *= size
    ctx.run.shape.set("n_gpus", total, SOURCE)
    ctx.run.shape.set("tp", mesh.get("tp"), SOURCE)
    ctx.run.shape.set("pp", mesh.get("pp"), SOURCE)
    ctx.run.shape.set("cp", mesh.get("cp"), SOURCE)
    if "dp_shard" in mesh:
        ctx.run.shape.set("fsdp", "full_shard", SOURCE)
    ctx.run.config["device_mesh"] = mesh


def _start(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.restart()


RULES = (
    Rule("step:", _STEP, _step),
    Rule("ModelArgs(", _MODEL_ARGS, _model_args),
    Rule("total parameters", _SIZE, _size),
    Rule(" capacity: ", _CAPACITY, _capacity),
    Rule("activation checkpointing", _CHECKPOINTING, _checkpointing),
    Rule("device mesh", _MESH, _mesh),
    Rule("Starting job", _START, _start),
    *_devices.RULES,
)

DIALECT = Dialect(
    name="torchtitan",
    framework="torchtitan",
    rules=RULES,
    signatures=(
        (re.compile(r"\bstep:\s*\d+\s+loss:\s*[\d.]+\s+(?:grad_norm:\s*[\d.]+\s+)?memory:\s*[\d.]+GiB"),
         Confidence.STRONG),
        (re.compile(r"\bstep:\s*\d+\s+loss:\s*[\d.]+\s+.*\b[tw]ps:\s*[\d,]+"), Confidence.LIKELY),
        (re.compile(r"^\[titan\]|Starting job: .*training"), Confidence.HINT),
    ),
)


# The reader interface (tracker.readers) is the dialect's own.
sniff = DIALECT.sniff
read_runs = DIALECT.read_runs
