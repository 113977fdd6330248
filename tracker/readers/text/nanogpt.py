"""nanoGPT, llm.c and modded-nanogpt console logs.

- nanoGPT ``train.py``: ``iter 100: loss 4.1234, time 152.31ms, mfu 31.42%`` (for the first
  iterations mfu prints ``-100.00%``, a sentinel, not a value; some forks add a unit after
  the loss, ``loss 3.2 BPC``) and ``step 2000: train loss 1.7648, val loss 1.8857``
  (an estimate on both splits: the train figure is ``eval/train_loss``);
- llm.c: the ``main.log`` it writes (``s:12 trl:3.21 lr:0.0006 norm:1.2``, ``s:250 tel:4.1``)
  and its console (``step  12/74 | loss 3.21 | norm 1.2 | lr 6.00e-04 | 190.74 ms |
  42.1% bf16 MFU | 24735 tok/s``);
- modded-nanogpt: ``step:1/1670 train_time:95ms step_avg:95.38ms`` (``step_avg`` is the
  mean step time so far), ``step:125/1670 val_loss:4.12 ...`` and the closing
  ``peak memory allocated: 32712 MiB reserved: 46816 MiB`` (cumulative).
"""

from __future__ import annotations

import re

from tracker.readers._sniffing import Confidence
from tracker.readers.text import _devices
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._values import NUM, num

SOURCE = "nanoGPT log"
_ITER = re.compile(
    rf"^iter (?P<step>\d+): loss (?P<loss>{NUM})(?: [A-Za-z]+)?, time (?P<ms>{NUM}) ?ms"
    rf"(?:, mfu (?P<mfu>{NUM})%)?"
)
_EVAL = re.compile(
    rf"^step (?P<step>\d+): train loss (?P<train>{NUM})(?: [A-Za-z]+)?, val loss (?P<val>{NUM})"
)
_LLMC_FILE = re.compile(r"^s:(?P<step>\d+) (?P<rest>[a-z]+:.*)")
_LLMC_FIELD = re.compile(rf"(?P<key>[a-z]+):(?P<value>{NUM})")
_LLMC_NAMES = {"trl": "loss", "tel": "eval_loss", "lr": "lr", "norm": "grad_norm",
               "eval": "eval/hellaswag"}
_LLMC_CONSOLE = re.compile(
    rf"^step\s+(?P<step>\d+)/\d+ \| (?:train )?loss (?P<loss>{NUM}) \| norm (?P<norm>{NUM}) \| "
    rf"lr (?P<lr>{NUM}) \| (?P<ms>{NUM}) ms \| (?P<mfu>{NUM})% \w* ?MFU \| (?P<tps>{NUM}) tok/s"
)
_LLMC_VAL = re.compile(rf"^val loss (?P<val>{NUM})")
_MODDED = re.compile(r"^step:(?P<step>\d+)/\d+ (?P<rest>\w+:.*)")
_MODDED_FIELD = re.compile(rf"(?P<key>\w+):(?P<value>{NUM})(?P<ms>ms)?")
_MODDED_NAMES = {"train_loss": "loss", "val_loss": "eval_loss", "step_avg": "step_time_s",
                 "train_time": "train_time_s"}
_PEAK = re.compile(
    r"peak memory (?:allocated|consumption): (?P<alloc>\d+) ?MiB"
    r"(?: reserved: (?P<reserved>\d+) ?MiB)?"
)
_PARAMS = re.compile(rf"number of parameters: (?P<n>{NUM})M")
_VOCAB = re.compile(r"found vocab_size = (?P<n>\d+)")
_START = re.compile(r"^(?:Initializing a new model from scratch|Resuming training from )")


def _iter(match: re.Match[str], ctx: Context) -> None:
    metrics = {"loss": num(match["loss"]), "step_time_s": num(match["ms"]) / 1000}
    if match["mfu"] is not None and num(match["mfu"]) >= 0:  # -100.00% means "not measured yet"
        metrics["mfu"] = num(match["mfu"])
    ctx.runs.point(int(match["step"]), metrics, ctx.wall())


def _eval(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.point(int(match["step"]), {"eval/train_loss": num(match["train"]),
                                        "eval_loss": num(match["val"])}, ctx.wall())


def _llmc_file(match: re.Match[str], ctx: Context) -> None:
    metrics = {_LLMC_NAMES.get(f["key"], f["key"]): num(f["value"])
               for f in _LLMC_FIELD.finditer(match["rest"])}
    ctx.runs.point(int(match["step"]), metrics)


def _llmc_console(match: re.Match[str], ctx: Context) -> None:
    metrics = {"loss": num(match["loss"]), "grad_norm": num(match["norm"]), "lr": num(match["lr"]),
               "step_time_s": num(match["ms"]) / 1000, "tokens_per_s": num(match["tps"])}
    if num(match["mfu"]) >= 0:
        metrics["mfu"] = num(match["mfu"])
    ctx.runs.point(int(match["step"]), metrics, ctx.wall())


def _llmc_val(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.point(None, {"eval_loss": num(match["val"])}, ctx.wall())


def _modded(match: re.Match[str], ctx: Context) -> None:
    metrics = {}
    for field in _MODDED_FIELD.finditer(match["rest"]):
        value = num(field["value"]) / (1000 if field["ms"] else 1)
        metrics[_MODDED_NAMES.get(field["key"], field["key"])] = value
    ctx.runs.point(int(match["step"]), metrics, ctx.wall())


def _peak(match: re.Match[str], ctx: Context) -> None:
    metrics = {"mem_peak_gib": int(match["alloc"]) / 1024}
    if match["reserved"] is not None:
        metrics["mem_reserved_gib"] = int(match["reserved"]) / 1024
    ctx.runs.point(None, metrics, ctx.wall(), peak=True)
    for metric in metrics:
        ctx.runs.note_scope(metric, "cumulative")


def _params(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("n_params", int(num(match["n"]) * 1e6), SOURCE)


def _vocab(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("vocab", int(match["n"]), SOURCE)


def _start(match: re.Match[str], ctx: Context) -> None:
    ctx.runs.restart()


RULES = (
    Rule("iter ", _ITER, _iter),
    Rule("s:", _LLMC_FILE, _llmc_file),
    Rule("step:", _MODDED, _modded),
    Rule("train loss", _EVAL, _eval),
    Rule(" MFU |", _LLMC_CONSOLE, _llmc_console),
    Rule("val loss ", _LLMC_VAL, _llmc_val),
    Rule("peak memory", _PEAK, _peak),
    Rule("number of parameters", _PARAMS, _params),
    Rule("vocab_size", _VOCAB, _vocab),
    Rule("from", _START, _start),
    *_devices.RULES,
)

DIALECT = Dialect(
    name="nanogpt",
    framework="nanogpt",
    rules=RULES,
    signatures=(
        (_ITER, Confidence.STRONG),
        (_EVAL, Confidence.LIKELY),
        (re.compile(r"^s:\d+ t[re]l:[\d.]+"), Confidence.LIKELY),
        (re.compile(r"^step:\d+/\d+ (?:val_loss:[\d.]+ )?train_time:\d+ms step_avg:"), Confidence.LIKELY),
        (_LLMC_CONSOLE, Confidence.LIKELY),
    ),
)


# The reader interface (tracker.readers) is the dialect's own.
sniff = DIALECT.sniff
read_runs = DIALECT.read_runs
