"""Console output of the HF Trainer and trainers built on it (TRL, axolotl, ms-swift).

The Trainer prints each log as a Python dict (``{'loss': 0.8091, 'learning_rate':
0.0003, 'epoch': 0.08}``; transformers 5 quotes the numbers, ``'loss': '2.105'``),
usually inside tqdm redraws; axolotl adds ``'memory/max_allocated (GiB)'`` and
friends (peaks reset after each log), ms-swift ``'memory(GiB)'`` and
``'global_step/max_steps': '1/294'``. The dicts rarely carry the step, so it is
taken, in this order, from the dict itself, from the training bar's position
(eval rows), from ``logging_steps`` (train rows), from the epoch and the steps
per epoch, or else counted. The ``TrainingArguments(...)`` dump, the
``***** Running training *****`` block and the final ``***** train metrics
*****`` block fill the shape and summary. DeepSpeed's lines are read too.
"""

from __future__ import annotations

import re

from tracker.readers._sniffing import Confidence, outranks
from tracker.readers._trainer_rows import Row, parameter_info, parse_row, trainer_shape
from tracker.readers.text import _devices, deepspeed
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._lines import Line
from tracker.readers.text._values import num, py_value, seconds

ARGS_SOURCE = "TrainingArguments in the log"
BANNER_SOURCE = "Trainer start-up banner"
_DICT = re.compile(r"\{'[^{}]*\}")
_PAIR = re.compile(r"'(?P<key>[^']+)':\s*(?P<value>'[^']*'|[^,}]+)")
# Keys that make a printed dict a trainer log row (and not, say, generation settings).
_ROW_KEYS = ("loss", "learning_rate", "lr", "grad_norm", "epoch", "reward")
_ROW_PREFIXES = ("eval_", "train_", "test_", "predict_", "memory/")
_BAR = re.compile(r"(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\b")
_ARGS_START = re.compile(r"\b(?P<cls>\w*(?:Arguments|Config))\($")
# The class of the printed arguments names the framework that printed them.
_FRAMEWORKS = {"SftArguments": "ms-swift", "RLHFArguments": "ms-swift",
               "PretrainArguments": "ms-swift",
               "SFTConfig": "trl", "DPOConfig": "trl", "GRPOConfig": "trl", "ORPOConfig": "trl",
               "KTOConfig": "trl", "RewardConfig": "trl", "PPOConfig": "trl"}
_ARG = re.compile(r"^\s*(?P<key>\w+)=(?P<value>.*?),?\s*$")
_BANNER = re.compile(r"\*{5} Running training \*{5}")
_BANNER_LINE = re.compile(r"^\s+(?P<key>[A-Z][^=]*?)\s*=\s*(?P<value>\S.*?)\s*$")
_BANNER_FIELDS = {"Instantaneous batch size per device": "micro_batch",
                  "Gradient Accumulation steps": "grad_accum",
                  "Number of trainable parameters": "n_trainable_params"}
_METRIC_LINE = re.compile(r"^\s+(?P<key>\w+)\s*=\s*(?P<value>\S+)\s*$")
_METRICS_BLOCK = re.compile(r"\*{5} (?P<split>\w+) metrics \*{5}")
_CONTINUING = re.compile(r"Continuing training from global step (?P<step>\d+)")
_SWIFT_DEEPSPEED = re.compile(r"Using deepspeed: (?P<config>\{.*\})\s*$")
_PARAMETER_INFO = re.compile(r"model_parameter_info: (?P<info>.*)")


def _dict(match: re.Match[str], ctx: Context) -> bool:
    """A trainer log row; returns False for other printed dicts."""
    fields = {m["key"]: m["value"].strip().strip("'") for m in _PAIR.finditer(match.group())}
    if not any(k in _ROW_KEYS or k.startswith(_ROW_PREFIXES) for k in fields):
        return False
    _flush(ctx, None)
    _bar(_BAR.search(ctx.line.text, 0, match.start()), ctx)
    row = parse_row(fields)
    if row.kind == "summary":
        ctx.run.summary.update(row.metrics)
    else:
        # tqdm redraws the training bar right after a printed row, at the row's step: wait for it.
        ctx.state["row"] = (row, ctx.wall())
    return True


def _flush(ctx: Context, bar_after: int | None) -> None:
    """Record the row waiting for its step."""
    waiting = ctx.state.pop("row", None)
    if waiting is None:
        return
    row, wall = waiting
    metrics = row.metrics
    if row.kind == "eval":
        metrics.pop("epoch", None)  # the train row of this step has it
    step = _step(row, ctx, bar_after)
    ctx.runs.point(step, metrics, wall)
    if row.kind == "train":
        ctx.state["last_train"] = step
    for key in metrics:
        if key.startswith("memory/"):
            ctx.runs.note_scope(key, "per-interval")  # axolotl resets peaks after each log
        elif key == "mem_reserved_gib":
            ctx.runs.note_scope(key, "cumulative")


def _step(row: Row, ctx: Context, bar_after: int | None) -> int:
    """The row's step: stated, or inferred (never below the last step: that would be a resume).

    Train rows fall on multiples of ``logging_steps``; a console copy keeps only
    the last redraw of a bar, so the bar is second best for them. Eval rows
    come at any step: the bar drawn after them says which.
    """
    state, last = ctx.state, ctx.runs.step or 0
    bar_before = state.pop("bar", None)
    if row.step is not None:
        return row.step
    every, per_epoch = state.get("logging_steps"), state.get("steps_per_epoch")
    epoch = row.metrics.get("epoch")
    bar = bar_after if bar_after is not None else bar_before
    if row.kind == "train" and every:
        step = (state.get("last_train", 0) // every + 1) * every
    elif bar is not None and bar >= last:
        step = bar
    elif epoch is not None and per_epoch:
        step = round(epoch * per_epoch)
    elif row.kind == "train":  # DeepSpeed's own lines may have logged this step already
        step = last if last > state.get("last_train", 0) else last + 1
    else:
        step = last
    return max(step, last)


def _bar(match: re.Match[str] | None, ctx: Context) -> None:
    """The training bar's position (the widest bar: eval and saving bars are shorter)."""
    if match is None:
        return
    total = int(match["total"])
    if total >= ctx.state.get("bar_total", 0):
        ctx.state["bar_total"] = total
        if "row" in ctx.state:
            _flush(ctx, int(match["n"]))
        else:
            ctx.state["bar"] = int(match["n"])


def _finish(ctx: Context) -> None:
    _flush(ctx, None)


def _args_start(match: re.Match[str], ctx: Context) -> None:
    """``TrainingArguments(`` then ``name=value,`` lines up to ``)``."""
    args: dict = {}
    ctx.run.shape.set("framework", _FRAMEWORKS.get(match["cls"]), ARGS_SOURCE)

    def collect(line: Line) -> bool:
        if line.text.strip() == ")":
            ctx.collect = None
            _apply_args(args, ctx)
            return True
        arg = _ARG.match(line.text)
        if arg is None:
            return False
        args[arg["key"]] = py_value(arg["value"])
        return True

    ctx.collect = collect


def _apply_args(args: dict, ctx: Context) -> None:
    ctx.run.config["args"] = {k: v for k, v in args.items() if isinstance(v, (int, float, str))}
    ctx.run.shape.update(trainer_shape(args), ARGS_SOURCE)
    for key in ("logging_steps", "max_steps"):
        if isinstance(args.get(key), int) and args[key] > 0:
            ctx.state[key] = args[key]


def _banner(match: re.Match[str], ctx: Context) -> None:
    """``***** Running training *****``: a (re)start of training, then its numbers."""
    ctx.runs.restart()
    facts: dict[str, str] = {}

    def collect(line: Line) -> bool:
        field = _BANNER_LINE.match(line.text)
        if field is None:
            ctx.collect = None
            _apply_banner(facts, ctx)
            return False
        facts[field["key"]] = field["value"]
        return True

    ctx.collect = collect


def _apply_banner(facts: dict[str, str], ctx: Context) -> None:
    numbers = {k: int(num(v)) for k, v in facts.items() if v.replace(",", "").isdigit()}
    for key, field in _BANNER_FIELDS.items():
        ctx.run.shape.set(field, numbers.get(key), BANNER_SOURCE)
    total = next((v for k, v in numbers.items() if k.startswith("Total train batch size")), None)
    ctx.run.shape.set("global_batch", total, BANNER_SOURCE)
    steps, epochs = numbers.get("Total optimization steps"), numbers.get("Num Epochs")
    if steps:
        ctx.state["max_steps"] = steps
        if epochs:
            ctx.state["steps_per_epoch"] = steps / epochs


def _metrics_block(match: re.Match[str], ctx: Context) -> None:
    """``***** train metrics *****`` then ``  train_runtime = 17:52:38.15`` lines: the summary."""
    def collect(line: Line) -> bool:
        field = _BANNER_LINE.match(line.text) or _METRIC_LINE.match(line.text)
        if field is None:
            ctx.collect = None
            return False
        value = seconds(field["value"])
        if value is not None:
            ctx.run.summary.setdefault(field["key"], value)
        return True

    ctx.collect = collect


def _continuing(match: re.Match[str], ctx: Context) -> None:
    ctx.state["last_train"] = int(match["step"])


def _swift_deepspeed(match: re.Match[str], ctx: Context) -> None:
    config = py_value(match["config"])
    if isinstance(config, dict):
        source = "ms-swift DeepSpeed config in the log"
        ctx.run.shape.update(trainer_shape({"deepspeed": config}), source)


def _parameter_info(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.update(parameter_info(match["info"]), "ms-swift model_parameter_info")


RULES = (
    Rule("{'", _DICT, _dict),
    Rule("%|", _BAR, _bar),
    Rule("(", _ARGS_START, _args_start),
    Rule("Running training", _BANNER, _banner),
    Rule(" metrics *****", _METRICS_BLOCK, _metrics_block),
    Rule("Continuing training from global step", _CONTINUING, _continuing),
    Rule("Using deepspeed: {", _SWIFT_DEEPSPEED, _swift_deepspeed),
    Rule("model_parameter_info", _PARAMETER_INFO, _parameter_info),
    *deepspeed.COMPANION_RULES,
    *_devices.RULES,
)

DIALECT = Dialect(
    name="hf_console",
    framework="transformers",
    rules=RULES,
    signatures=(
        # Above DeepSpeed's progress lines: an HF run with DeepSpeed logs its rows here.
        (re.compile(r"\{'(?:loss|eval_loss|train_runtime)': '?[-\d.]"), outranks(Confidence.LIKELY, 2)),
        (re.compile(r"\{'(?:learning_rate|grad_norm|epoch)': '?[-\d.].*'loss'"), outranks(Confidence.LIKELY)),
        (re.compile(r"\*{5} Running training \*{5}"), Confidence.WEAK),
    ),
    finish=_finish,
)


# The reader interface (tracker.readers) is the dialect's own.
sniff = DIALECT.sniff
read_runs = DIALECT.read_runs
