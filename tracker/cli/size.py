"""``headroom size``: per-GPU memory of a planned run, which GPUs it fits, and layouts that fit.

The analytical model gives the breakdown and the three readings; when the
database holds runs with recorded peaks, the calibrated prediction (with an
interval and the runs it leaned on) comes beside it.
"""

from __future__ import annotations

import argparse
import math
from argparse import BooleanOptionalAction
from pathlib import Path

from core.memory.frameworks import FRAMEWORKS
from core.metrics import MARGIN
from core.shape import LOSSES, RECOMPUTE
from tracker.cli import command_parser
from tracker.cli._output import fail, print_json, print_table

OPTIMIZERS = ("adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd", "sgd-momentum",
              "adafactor", "none")

ARCH = ("layers", "hidden", "heads", "kv_heads", "vocab", "intermediate")
# core.export.FORMATS, spelt out so --help needs no import.
EXPORT_FORMATS = ("hf", "accelerate", "deepspeed", "torchtune", "axolotl", "lightning", "launch")


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "size", parents,
                       description="Predict the per-GPU memory of a run before launching it.")
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", metavar="PRESET", help="a model preset (--list-models)")
    model.add_argument("--config", metavar="PATH", type=Path, help="an HF config.json or folder")
    model.add_argument("--params", metavar="N", type=_count, help="parameter count: 7e9, 7B, 350M")
    for name in ARCH:
        p.add_argument(f"--{name.replace('_', '-')}", type=_positive, metavar="N",
                       help=f"give or override the model's {name.replace('_', ' ')}")
    p.add_argument("--method", default="full", choices=("full", "lora", "qlora", "inference"))
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16",
                                           "fp8", "int8", "nf4"),
                   help="default: mixed-bf16 for full and LoRA, nf4 for QLoRA, bf16 for inference")
    p.add_argument("--optimizer", choices=OPTIMIZERS,
                   help="default: adamw for training, none for inference (sgd has no momentum; "
                        "paged-adamw is bitsandbytes' 32-bit paged AdamW)")
    p.add_argument("--lora-rank", type=_positive, default=16, metavar="R")
    p.add_argument("--lora-targets", default="all-linear", type=_targets, metavar="TARGETS",
                   help="qv, attention, all-linear, or a comma list of q,k,v,o,gate,up,down")
    p.add_argument("--no-lora-dropout", action="store_true", help="LoRA dropout is 0")
    p.add_argument("--adapter-dtype", choices=("fp32", "bf16"),
                   help="dtype of the LoRA weights (PEFT: fp32; torchtune, LitGPT: bf16)")
    p.add_argument("--quant-type", default="nf4", choices=("nf4", "fp4"))
    p.add_argument("--no-double-quant", action="store_true")
    p.add_argument("--batch", type=_positive, default=1, metavar="B", help="micro batch per GPU")
    p.add_argument("--seq", type=_positive, default=2048, metavar="S", help="sequence length")
    p.add_argument("--grad-accum", type=_positive, default=1, metavar="N")
    p.add_argument("--grad-checkpointing", action="store_true", help="same as --recompute full")
    p.add_argument("--recompute", choices=RECOMPUTE,
                   help="activation checkpointing: selective (attention), op (torchtitan's "
                        "per-op policy) or full (per layer)")
    p.add_argument("--attention", choices=("eager", "sdpa", "flash"), help="default: sdpa")
    loss = p.add_mutually_exclusive_group()
    loss.add_argument("--loss", choices=LOSSES, help="how the loss meets the logits")
    loss.add_argument("--fused-loss", dest="loss", action="store_const", const="fused",
                      help="fused linear cross-entropy: logits never materialised (Liger, CCE)")
    loss.add_argument("--chunked-loss", dest="loss", action="store_const", const="chunked",
                      help="cross-entropy over chunks of 16-bit logits (torchtune, LitGPT)")
    p.add_argument("--activation-offload", action=BooleanOptionalAction,
                   help="saved activations moved to CPU memory during forward (torchtune)")
    p.add_argument("--optimizer-in-backward", action=BooleanOptionalAction,
                   help="each gradient applied and freed as backward makes it (torchtune)")
    p.add_argument("--compile", action=BooleanOptionalAction, help="torch.compile the model")
    p.add_argument("--fp8", action="store_true",
                   help="float8 linears (torchao / Transformer Engine): same as --precision fp8")
    p.add_argument("--framework", default="hf", metavar="NAME",
                   help="whose defaults fill what you leave unsaid: " + ", ".join(FRAMEWORKS))
    p.add_argument("--gpus", type=_positive, default=1, metavar="N", help="GPUs in the run")
    p.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3))
    p.add_argument("--fsdp", nargs="?", const="full", choices=("full", "grad-op", "hybrid"))
    p.add_argument("--offload", action="store_true", help="offload optimizer state to CPU")
    p.add_argument("--offload-params", action="store_true", help="offload parameters (ZeRO-3)")
    p.add_argument("--tp", type=_positive, default=1, metavar="T")
    p.add_argument("--pp", type=_positive, default=1, metavar="P")
    p.add_argument("--cp", type=_positive, default=1, metavar="C",
                   help="context parallelism: the sequence split over C GPUs")
    p.add_argument("--sp", action="store_true", help="sequence parallelism (with --tp)")
    p.add_argument("--interleave", type=_positive, metavar="V",
                   help="interleaved pipeline schedule with V virtual stages per GPU")
    p.add_argument("--global-batch", type=_positive, metavar="N",
                   help="samples per optimizer step to keep whatever the layout (default: each "
                        "data-parallel replica keeps --batch x --grad-accum)")
    p.add_argument("--tokens", type=_count, metavar="N",
                   help="tokens to train (e.g. 2B): plans show hours and rental cost")
    p.add_argument("--gpu", metavar="NAME", help="the GPU model to check and plan for")
    p.add_argument("--max-gpus", type=_positive, metavar="N",
                   help="GPU budget for plans (default: as many as the job needs)")
    p.add_argument("--fit-to-card", action="store_true",
                   help="with --gpu and --gpus: the best setup those cards run, or the smallest "
                        "change that would fit")
    p.add_argument("--export", metavar="FORMAT", choices=EXPORT_FORMATS,
                   help="print the top plan (or --plan N) as a framework's config instead of "
                        "the report: " + ", ".join(EXPORT_FORMATS))
    p.add_argument("--plan", type=_positive, default=1, metavar="N",
                   help="with --export: the plan numbered N in the plans table")
    p.add_argument("-o", "--output", metavar="PATH", type=Path,
                   help="with --export: write the config to PATH")
    p.add_argument("--margin", type=_fraction, default=MARGIN, help="free fraction to keep")
    p.add_argument("--no-history", action="store_true", help="skip the calibrated prediction")
    p.add_argument("--simulate", action="store_true",
                   help="also run one step of the model's own code on fake tensors (seconds)")
    p.add_argument("--list-models", action="store_true", help="list model presets and exit")
    p.add_argument("--list-gpus", action="store_true", help="list the GPU catalog and exit")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


# Parameter counts past this are typing slips (1e400 is infinity), not models.
MAX_PARAMS = 1e15


def _count(text: str) -> float:
    from core.models import ModelError, parse_count

    try:
        value = parse_count(text)
    except ModelError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not math.isfinite(value) or value > MAX_PARAMS:
        raise argparse.ArgumentTypeError(f"not a parameter count: {text!r} (at most {MAX_PARAMS:.0e})")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _targets(text: str) -> str:
    from core.memory.spec import TargetError, lora_kinds

    try:
        lora_kinds(text)
    except TargetError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("the margin is a fraction between 0 and 1, e.g. 0.15")
    return value


def run(args: argparse.Namespace) -> int:
    from tracker.cli import _sizing

    if args.list_models:
        return _sizing.list_models(args.json)
    if args.list_gpus:
        return _sizing.list_gpus(args.json)
    try:
        report = _sizing.size(args)
    except ValueError as err:  # SetupError, ModelError: the user's values do not add up
        fail(str(err), code=2)
    if args.export:
        return _sizing.write_export(report["export"], args.output, args.json)
    if args.json:
        print_json(report)
    else:
        _sizing.print_report(report, print_table)
    return 0
