"""Megatron-LM, Megatron-DeepSpeed and NeMo/Megatron-Bridge console logs.

Formats (``megatron/training/training.py::training_log``, ``utils.py::report_memory``,
``theoretical_memory_usage.py``, ``arguments.py``):

- `` [2024-03-09 10:49:15] iteration  6502/159576 | consumed samples: 216960 | elapsed time per
  iteration (ms): 31074.1 | learning rate: 5.997E-05 | global batch size: 80 | lm loss:
  3.876781E+00 | loss scale: 4096.0 | grad norm: 3246.595 | number of skipped iterations: 0 |
  number of nan iterations: 0 |`` (timestamp since 2024-03; every ``<name> loss`` is kept);
- ``[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: ... | reserved:
  ... | max reserved: ...``: MiB, cumulative since start, one line per TP/PP rank. Each rank's
  peak is kept as ``mem_peak_gib/rank<r>`` and the run's peak is the max over ranks;
- the Megatron-Bridge variant ``memory (GB) | mem-max-allocated-gigabytes: ...`` (decimal GB);
- ``Theoretical memory footprints: weight and optimizer=... MB, activation=... MB, total=... MB``:
  Megatron's own prediction (MiB), kept in the summary as ``megatron_predicted_*_gib``;
- the arguments dump at start-up, which fills the run's shape;
- `` validation loss at iteration 500 | lm loss value: 6.3E+00 | lm loss PPL: 5.6E+02 |``.

Megatron-DeepSpeed logs also carry DeepSpeed's memory and config lines.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from core.metrics import GIB
from core.train_args import shape_fields
from tracker.readers._sniffing import Confidence, outranks
from tracker.readers.text import _devices, deepspeed
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._lines import Line
from tracker.readers.text._values import NUM, STAMP, num, py_value, stamp_time

ARGS_SOURCE = "Megatron arguments"
_ITERATION = re.compile(
    rf"(?:\[(?P<stamp>{STAMP})\]\s*)?\biteration\s+(?P<step>\d+)\s*/\s*(?P<total>\d+)\s*\|"
)
_VALIDATION = re.compile(
    r"validation loss at (?:iteration (?P<step>\d+)|the end of training for (?P<split>\w+) data)"
    r"[^|]*\|(?P<rest>.*)"
)
_MEMORY = re.compile(
    r"\[Rank (?P<rank>\d+)\] \((?P<when>[^)]*)\) memory \((?P<unit>MB|GB)\)\s*\|(?P<rest>.*)"
)
_MEMORY_DONE = re.compile(rf"max reserved: {NUM}|mem-allocated-count: \d+").search
_MEMORY_WHEN = re.compile(r"after (\d+) iterations|iteration (\d+)")
_MB_NAMES = {"max allocated": "mem_peak_gib", "max reserved": "mem_reserved_gib",
             "allocated": "mem_allocated_now_gib", "reserved": "mem_reserved_now_gib",
             "total device memory used": "mem_used_gib"}
_GB_NAMES = {"mem-max-allocated-gigabytes": "mem_peak_gib",
             "mem-max-reserved-gigabytes": "mem_reserved_gib",
             "mem-allocated-gigabytes": "mem_allocated_now_gib",
             "mem-reserved-gigabytes": "mem_reserved_now_gib"}
_PER_RANK = ("mem_peak_gib", "mem_reserved_gib")
_THEORY = re.compile(
    rf"Theoretical memory footprints: weight and optimizer=(?P<weights>{NUM}) MB"
    rf"(?:, activation=(?P<activations>{NUM}) MB, total=(?P<total>{NUM}) MB)?"
)
_ARGS_START = re.compile(r"-{4,} arguments -{4,}")
_ARG = re.compile(r"^\s*(?P<key>\w+) \.{2,} ?(?P<value>.*?)\s*$")
_VOCAB = re.compile(r"padded vocab \(size: \d+\) with \d+ dummy tokens \(new size: (?P<n>\d+)\)")
_RANK_PARAMS = re.compile(
    r"number of parameters on \(tensor, pipeline\) model parallel rank "
    r"\((?P<tp>\d+), (?P<pp>\d+)\): (?P<n>\d+)"
)
_TOTAL_PARAMS = re.compile(rf"Total number of parameters in billions: (?P<n>{NUM})")
_MICROBATCHES = re.compile(r"setting number of microbatches to constant (?P<n>\d+)")
_TRAINING_START = re.compile(rf"\[before the start of training step\] datetime: (?P<stamp>{STAMP})")


def _iteration_done(text: str) -> bool:
    """Megatron ends every field, the last one too, with " |"."""
    return text.rstrip().endswith("|")


def _iteration(match: re.Match[str], ctx: Context) -> None:
    metrics = _fields(match.string[match.end():])
    wall = stamp_time(match["stamp"]) or ctx.wall()
    ctx.runs.point(int(match["step"]), metrics, wall)
    ctx.run.config["train_iters"] = int(match["total"])


def _fields(text: str) -> dict[str, float]:
    """``key: value`` fields between ``|`` separators; text values are skipped."""
    out = {}
    for field in text.split("|"):
        key, sep, value = field.rpartition(":")
        if sep:
            try:
                out[key.strip()] = float(value)
            except ValueError:
                try:
                    out[key.strip()] = num(value.strip())
                except ValueError:
                    pass
    return out


def _validation(match: re.Match[str], ctx: Context) -> None:
    fields = {key.removesuffix(" value"): value for key, value in _fields(match["rest"]).items()}
    if match["split"] and match["split"] != "val":  # the final test-set figures
        ctx.run.summary.update({f"{match['split']}/{key}": value for key, value in fields.items()})
        return
    metrics = {"eval_loss" if key == "lm loss" else f"eval/{key}": v for key, v in fields.items()}
    step = int(match["step"]) if match["step"] else None
    ctx.runs.point(step, metrics, ctx.wall())


def _memory(match: re.Match[str], ctx: Context) -> None:
    """One rank's memory report; the run's series keep the largest of the ranks at each step."""
    when = _MEMORY_WHEN.search(match["when"])
    step = int(when.group(1) or when.group(2)) if when else None
    if match["unit"] == "MB":  # MiB in fact (bytes / 2**20)
        fields = _fields(match["rest"])
        metrics = {_MB_NAMES[k]: v / 1024 for k, v in fields.items() if k in _MB_NAMES}
    else:  # Megatron-Bridge: decimal gigabytes
        metrics = {_gb_name(k): (v * 1e9 / GIB if k.endswith("-gigabytes") else v)
                   for k, v in _fields(match["rest"]).items()}
    rank = match["rank"]
    ctx.runs.point(step, metrics, ctx.wall(), peak=True)
    per_rank = {f"{m}/rank{rank}": metrics[m] for m in _PER_RANK if m in metrics}
    ctx.runs.point(step, per_rank, ctx.wall())
    for metric in _PER_RANK:
        ctx.runs.note_scope(metric, "cumulative")


def _gb_name(key: str) -> str:
    if key in _GB_NAMES:
        return _GB_NAMES[key]
    name = key.replace("-", "_")
    return name.replace("_gigabytes", "_gib") if name.endswith("_gigabytes") else name


def _theory(match: re.Match[str], ctx: Context) -> None:
    """Megatron's own estimate (MiB), to show beside Headroom's prediction."""
    for part in ("weights", "activations", "total"):
        if match[part] is not None:
            ctx.run.summary[f"megatron_predicted_{part}_gib"] = round(num(match[part]) / 1024, 4)


def _args_start(match: re.Match[str], ctx: Context) -> None:
    """Collect ``  name ..... value`` lines up to ``end of arguments`` (other ranks' lines pass)."""
    ctx.runs.restart()
    args = ctx.state["args"] = {}

    def collect(line: Line) -> bool:
        if "end of arguments" in line.text:
            ctx.collect = None
            _apply_args(ctx)
            return True
        arg = _ARG.match(line.text)
        if arg is None:
            return False
        args[arg["key"]] = py_value(arg["value"])
        return True

    ctx.collect = collect


def _apply_args(ctx: Context) -> None:
    args = ctx.state.pop("args", None)
    if not args:
        return
    ctx.run.config["args"] = args
    ctx.run.shape.update(megatron_shape(args), ARGS_SOURCE)
    framework = "megatron-deepspeed" if args.get("deepspeed") else "megatron-lm"
    ctx.run.shape.set("framework", framework, ARGS_SOURCE)
    micro, batch = args.get("micro_batch_size"), args.get("global_batch_size")
    dp = args.get("data_parallel_size")
    if all(isinstance(v, int) and v for v in (micro, batch, dp)):
        ctx.run.shape.set("grad_accum", batch // (micro * dp), ARGS_SOURCE)


def megatron_shape(args: dict[str, Any]) -> dict[str, Any]:
    """Shape fields of Megatron arguments: the common ones, plus what only Megatron says."""
    out = shape_fields(args)
    out["method"] = "full"
    if args.get("fp8"):
        out["precision"] = "fp8"
    if "zero_stage" not in out and args.get("use_distributed_optimizer"):
        out["zero_stage"] = 1  # the distributed optimizer shards optimizer state over DP, as ZeRO-1
    if "untie_embeddings_and_output_weights" in args:
        out["tied_embeddings"] = not args["untie_embeddings_and_output_weights"]
    if isinstance(args.get("optimizer_cpu_offload"), bool):
        out["cpu_offload"] = args["optimizer_cpu_offload"]
    if args.get("num_experts") and isinstance(args.get("moe_router_topk"), int):
        out["n_active_experts"] = args["moe_router_topk"]
    return out


def _vocab(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("vocab", int(match["n"]), "Megatron tokenizer log")


def _rank_params(match: re.Match[str], ctx: Context) -> None:
    counts = ctx.state.setdefault("rank_params", {})
    counts[(match["tp"], match["pp"])] = int(match["n"])
    ctx.run.shape.set("n_params", sum(counts.values()), "Megatron parameter counts per TP/PP rank")


def _total_params(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("n_params", int(num(match["n"]) * 1e9), "Megatron log (billions, 2 decimals)",
                      overwrite=False)


def _microbatches(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("grad_accum", int(match["n"]), "Megatron log (microbatches per step)")


def _training_start(match: re.Match[str], ctx: Context) -> None:
    """Logs without timestamps on their iteration lines still say when training began."""
    when = stamp_time(match["stamp"])
    if when is not None and ctx.run.started is None:
        ctx.run.started = datetime.fromtimestamp(when)


def _finish(ctx: Context) -> None:
    _apply_args(ctx)  # a log cut short inside the arguments dump


RULES = (
    Rule("iteration", _ITERATION, _iteration, done=_iteration_done),
    Rule("memory (", _MEMORY, _memory, done=_MEMORY_DONE, any_rank=True),
    Rule("validation loss at", _VALIDATION, _validation),
    Rule("Theoretical memory footprints", _THEORY, _theory),
    Rule(" arguments ---", _ARGS_START, _args_start),
    Rule("padded vocab", _VOCAB, _vocab),
    Rule("number of parameters on", _RANK_PARAMS, _rank_params, any_rank=True),
    Rule("Total number of parameters", _TOTAL_PARAMS, _total_params),
    Rule("number of microbatches", _MICROBATCHES, _microbatches),
    Rule("before the start of training step", _TRAINING_START, _training_start),
    *deepspeed.COMPANION_RULES,
    *_devices.RULES,
)

DIALECT = Dialect(
    name="megatron",
    framework="megatron-lm",
    rules=RULES,
    signatures=(
        (re.compile(r"\biteration\s+\d+/\s*\d+ \| consumed samples:"), outranks(Confidence.STRONG, 2)),
        (re.compile(r"\[Rank \d+\] \(after \d+ iterations\) memory \((?:MB|GB)\)"), Confidence.STRONG),
        (re.compile(r"-{8,} arguments -{8,}"), Confidence.LIKELY),
        (re.compile(r"Theoretical memory footprints"), Confidence.LIKELY),
    ),
    finish=_finish,
)


# The reader interface (tracker.readers) is the dialect's own.
sniff = DIALECT.sniff
read_runs = DIALECT.read_runs
