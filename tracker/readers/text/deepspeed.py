"""DeepSpeed console output: engine progress, ThroughputTimer, memory reports, ZeRO config.

Formats (``deepspeed/runtime/engine.py``, ``utils/timer.py``, ``runtime/utils.py``):

- ``step=3, skipped=0, lr=[1.5e-07, 1.5e-07], mom=[(0.9, 0.999), ...]``: one lr per param group;
- ``epoch=0/micro_step=3/global_step=3, RunningAvgSamplesPerSec=74.6, CurrSamplesPerSec=74.6,
  MemAllocated=4.75GB, MaxMemAllocated=15.59GB``: GiB (bytes / 2**30); the max is cumulative;
- ``see_memory_usage``: ``MA 3.56 GB  Max_MA 3.58 GB  CA 3.83 GB  Max_CA 4 GB`` (GiB; Max_CA
  rounded to an integer; peaks are reset after printing, so each is a per-interval peak);
- ``time (ms) | fwd_microstep: 3865.99 | bwd_microstep: ...`` (wall_clock_breakdown);
- fp16 overflow: ``[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536,
  reducing to 32768`` and the older ``Reducing dynamic loss scale from 32768.0 to 16384.0``;
- the engine configuration block (``zero_optimization_stage ...... 2``) and its ``json = {...}``.

:data:`COMPANION_RULES` are the lines DeepSpeed adds to other trainers' logs
(Megatron-DeepSpeed, the HF Trainer with ``deepspeed=``).
"""

from __future__ import annotations

import json
import re

from core.dist_config import deepspeed_fields
from tracker.readers._sniffing import Confidence
from tracker.readers.text import _devices
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._lines import Line
from tracker.readers.text._values import NUM, num

SOURCE = "DeepSpeed config in the log"
_PAIR = re.compile(rf"(\w+)=({NUM})")
_COLON_PAIR = re.compile(rf"(\w+): ({NUM})")
_MAX_JSON_LINES = 2000

_PROGRESS = re.compile(r"\bstep=(?P<step>\d+), skipped=(?P<skipped>\d+), lr=\[(?P<lr>[^\]]*)\]")
_TIMER = re.compile(
    r"(?:epoch=(?P<epoch>\d+)/micro_step=\d+/global_step=(?P<step>\d+)|\b\d+/(?P<old>\d+)), "
    r"(?P<rest>(?:RunningAvg)?SamplesPerSec=.*)"
)
_TIMER_DONE = re.compile(r"MemAllocated=[\d.]+GB, MaxMemAllocated=[\d.]+GB").search
_TIMER_NAMES = {"CurrSamplesPerSec": "samples_per_s", "SamplesPerSec": "samples_per_s",
                "RunningAvgSamplesPerSec": "samples_per_s_avg",
                "MemAllocated": "mem_allocated_now_gib", "MaxMemAllocated": "mem_peak_gib"}
_SEE_MEMORY = re.compile(
    rf"\bMA (?P<ma>{NUM}) GB\s+Max_MA (?P<max_ma>{NUM}) GB\s+"
    rf"CA (?P<ca>{NUM}) GB\s+Max_CA (?P<max_ca>{NUM}) GB"
)
_HOST_MEMORY = re.compile(rf"CPU Virtual Memory:\s+used = (?P<used>{NUM}) GB")
_BREAKDOWN = re.compile(r"\btime \(ms\) \|(?P<rest>.*)")
_ATTEMPTED = re.compile(rf"Attempted loss scale: (?P<old>{NUM}), reducing to (?P<new>{NUM})")
_REDUCING = re.compile(rf"Reducing dynamic loss scale from (?P<old>{NUM}) to (?P<new>{NUM})")
_APEX = re.compile(rf"reducing loss scale to (?P<new>{NUM})")
_OVERFLOW_AT = re.compile(r"Grad overflow on iteration (?P<step>\d+)")
_PIPE_STEP = re.compile(
    rf"^steps: (?P<step>\d+) loss: (?P<loss>{NUM}) iter time \(s\): (?P<time>{NUM}) "
    rf"samples/sec: (?P<rate>{NUM})"
)
_ZERO = re.compile(
    r"Creating (?:\w+ )?ZeRO stage (?P<stage>\d) optimizer|ZeRO Stage (?P<stage2>\d)\b"
)
_CONFIG = re.compile(r"DeepSpeedEngine configuration:")
_CONFIG_LINE = re.compile(r"^\s*(?P<key>\w+) \.* ?(?P<value>\S.*?)\s*$")
_CONFIG_FIELDS = {"zero_optimization_stage": "zero_stage",
                  "train_micro_batch_size_per_gpu": "micro_batch",
                  "gradient_accumulation_steps": "grad_accum", "train_batch_size": "global_batch"}


def _progress(match: re.Match[str], ctx: Context) -> None:
    lrs = [num(x) for x in match["lr"].split(",") if x.strip()]
    metrics = {"skipped_iters": float(match["skipped"])}
    if lrs:
        metrics["lr"] = lrs[0]
        metrics.update({f"lr/group{i}": lr for i, lr in enumerate(lrs[1:], 1) if lr != lrs[0]})
    ctx.runs.point(int(match["step"]), metrics, ctx.wall())


def _timer(match: re.Match[str], ctx: Context) -> None:
    metrics = {_TIMER_NAMES.get(k, k): num(v) for k, v in _PAIR.findall(match["rest"])}
    if match["epoch"] is not None:
        metrics["epoch"] = float(match["epoch"])
    ctx.runs.point(int(match["step"] or match["old"]), metrics, ctx.wall(), peak=True)
    ctx.runs.note_scope("mem_peak_gib", "cumulative")


def _see_memory(match: re.Match[str], ctx: Context) -> None:
    values = {k: num(v) for k, v in match.groupdict().items()}
    ctx.runs.point(None, {
        "mem_allocated_now_gib": values["ma"], "mem_peak_gib": values["max_ma"],
        "mem_reserved_now_gib": values["ca"],
        # Max_CA is printed rounded to an integer; CA has two decimals and is never above the peak.
        "mem_reserved_gib": max(values["ca"], values["max_ca"]),
    }, ctx.wall(), peak=True)
    for metric in ("mem_peak_gib", "mem_reserved_gib"):
        ctx.runs.note_scope(metric, "per-interval")


def _host_memory(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.point(None, {"host_mem_used_gib": num(match["used"])}, ctx.wall(), peak=True)


def _breakdown(match: re.Match[str], ctx: Context) -> None:
    metrics = {f"time_{k}_s": num(v) / 1000 for k, v in _COLON_PAIR.findall(match["rest"])}
    ctx.runs.point(None, metrics, ctx.wall())


def _loss_scale(match: re.Match[str], ctx: Context) -> None:
    step = ctx.state.pop("overflow_step", None)
    ctx.runs.point(step, {"loss_scale": num(match["new"])}, ctx.wall())


def _overflow_at(match: re.Match[str], ctx: Context) -> None:
    ctx.state["overflow_step"] = int(match["step"])


def _pipe_step(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.point(int(match["step"]), {
        "loss": num(match["loss"]), "step_time_s": num(match["time"]),
        "samples_per_s": num(match["rate"]),
    }, ctx.wall())


def _zero(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("zero_stage", int(match["stage"] or match["stage2"]), "DeepSpeed log")


def _config(match: re.Match[str], ctx: Context) -> None:
    """The engine prints its configuration once per process: read it, and mark a process start."""
    ctx.runs.restart()
    ctx.collect = _ConfigBlock(ctx)


class _ConfigBlock:
    """``  key ...... value`` lines, then the user's ``json = {...}`` spread over lines."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.json: list[str] | None = None

    def __call__(self, line: Line) -> bool:
        if self.json is not None:
            self.json.append(line.text)
            text = "\n".join(self.json)
            if text.count("{") <= text.count("}") or len(self.json) > _MAX_JSON_LINES:
                self._apply_json(text)
            return True
        key, _, rest = line.text.strip().partition(" = ")
        if key == "json" and rest.startswith("{"):
            self.json = [rest]
            return True
        if not line.text[:1].isspace() and not line.text.startswith("}"):
            self.ctx.collect = None  # the block ended
            return False
        match = _CONFIG_LINE.match(line.text)
        if match is None:
            return True  # a line of a dict-valued setting
        field = _CONFIG_FIELDS.get(match["key"])
        if field and match["value"].isdigit():
            self.ctx.run.shape.set(field, int(match["value"]), SOURCE)
        elif match["key"] in ("bfloat16_enabled", "fp16_enabled") and match["value"] == "True":
            precision = "mixed-bf16" if match["key"].startswith("bfloat16") else "mixed-fp16"
            self.ctx.run.shape.set("precision", precision, SOURCE)
        return True

    def _apply_json(self, text: str) -> None:
        self.ctx.collect = None
        try:
            config = json.loads(text)
        except ValueError:
            return
        if isinstance(config, dict):
            self.ctx.run.config["deepspeed"] = config
            self.ctx.run.shape.update(deepspeed_fields(config), SOURCE)


# Lines DeepSpeed adds to any trainer's log that uses it.
COMPANION_RULES = (
    Rule("SamplesPerSec=", _TIMER, _timer, done=_TIMER_DONE),
    Rule("Max_MA", _SEE_MEMORY, _see_memory),
    Rule("CPU Virtual Memory", _HOST_MEMORY, _host_memory),
    Rule("time (ms) |", _BREAKDOWN, _breakdown),
    Rule("Grad overflow on iteration", _OVERFLOW_AT, _overflow_at),
    Rule("Attempted loss scale", _ATTEMPTED, _loss_scale),
    Rule("Reducing dynamic loss scale", _REDUCING, _loss_scale),
    Rule("reducing loss scale to", _APEX, _loss_scale),
    Rule("ZeRO", _ZERO, _zero),
    Rule("DeepSpeedEngine configuration", _CONFIG, _config),
)

RULES = (
    Rule("skipped=", _PROGRESS, _progress),
    Rule("steps: ", _PIPE_STEP, _pipe_step),
    *COMPANION_RULES,
    *_devices.RULES,
)

DIALECT = Dialect(
    name="deepspeed",
    framework="deepspeed",
    rules=RULES,
    signatures=(
        (re.compile(r"\bstep=\d+, skipped=\d+, lr=\["), Confidence.LIKELY),
        (re.compile(r"global_step=\d+, RunningAvgSamplesPerSec="), Confidence.LIKELY),
        (re.compile(r"\bMA [\d.]+ GB\s+Max_MA [\d.]+ GB"), Confidence.WEAK),
        (re.compile(r"DeepSpeedEngine configuration:"), Confidence.WEAK),
    ),
)


# The reader interface (tracker.readers) is the dialect's own.
sniff = DIALECT.sniff
read_runs = DIALECT.read_runs
