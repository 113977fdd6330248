"""``headroom size``: per-GPU memory of a planned run, which GPUs it fits, and layouts that fit.

The analytical model gives the breakdown and the three readings; when the
database holds runs with recorded peaks, the calibrated prediction (with an
interval and the runs it leaned on) comes beside it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tracker.cli._output import fail, print_json, print_table

ARCH = ("layers", "hidden", "heads", "kv_heads", "vocab", "intermediate")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("size", parents=parents, help="size a training or inference run",
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
    p.add_argument("--optimizer", choices=("adamw", "adamw-8bit", "paged-adamw-8bit", "sgd",
                                           "sgd-momentum", "adafactor", "none"),
                   help="default: adamw for training, none for inference (sgd has no momentum)")
    p.add_argument("--lora-rank", type=_positive, default=16, metavar="R")
    p.add_argument("--lora-targets", default="all-linear",
                   choices=("qv", "attention", "all-linear"))
    p.add_argument("--no-lora-dropout", action="store_true", help="LoRA dropout is 0")
    p.add_argument("--quant-type", default="nf4", choices=("nf4", "fp4"))
    p.add_argument("--no-double-quant", action="store_true")
    p.add_argument("--batch", type=_positive, default=1, metavar="B", help="micro batch per GPU")
    p.add_argument("--seq", type=_positive, default=2048, metavar="S", help="sequence length")
    p.add_argument("--grad-accum", type=_positive, default=1, metavar="N")
    p.add_argument("--grad-checkpointing", action="store_true", help="same as --recompute full")
    p.add_argument("--recompute", choices=("none", "selective", "full"))
    p.add_argument("--attention", default="sdpa", choices=("eager", "sdpa", "flash"))
    p.add_argument("--fused-loss", action="store_true", help="chunked / fused cross-entropy")
    p.add_argument("--framework", default="hf", help="hf (default), megatron, deepspeed, ...")
    p.add_argument("--gpus", type=_positive, default=1, metavar="N", help="GPUs in the run")
    p.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3))
    p.add_argument("--fsdp", nargs="?", const="full", choices=("full", "grad-op", "hybrid"))
    p.add_argument("--offload", action="store_true", help="offload optimizer state to CPU")
    p.add_argument("--offload-params", action="store_true", help="offload parameters (ZeRO-3)")
    p.add_argument("--tp", type=_positive, default=1, metavar="T")
    p.add_argument("--pp", type=_positive, default=1, metavar="P")
    p.add_argument("--sp", action="store_true", help="sequence parallelism (with --tp)")
    p.add_argument("--interleave", type=_positive, metavar="V",
                   help="interleaved pipeline schedule with V virtual stages per GPU")
    p.add_argument("--gpu", metavar="NAME", help="the GPU model to check and plan for")
    p.add_argument("--max-gpus", type=_positive, metavar="N", help="GPU budget for plans")
    p.add_argument("--margin", type=_fraction, default=0.15, help="free fraction to keep")
    p.add_argument("--no-history", action="store_true", help="skip the calibrated prediction")
    p.add_argument("--simulate", action="store_true",
                   help="also run one step of the model's own code on fake tensors (seconds)")
    p.add_argument("--list-models", action="store_true", help="list model presets and exit")
    p.add_argument("--list-gpus", action="store_true", help="list the GPU catalog and exit")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


def _count(text: str) -> float:
    from core.models import ModelError, parse_count

    try:
        return parse_count(text)
    except ModelError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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
    if args.json:
        print_json(report)
    else:
        _sizing.print_report(report, print_table)
    return 0
