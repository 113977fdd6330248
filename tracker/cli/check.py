"""``headroom check CONFIG``: does a real training config fit a GPU, before launching it.

Exit status 0 when it fits with the margin, 1 when it does not, 2 for input
it cannot read (a one-line error), so a launch script can gate on it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.metrics import MARGIN
from tracker.cli import command_parser
from tracker.cli._output import fail, print_json, print_table


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "check", parents,
                       description="Read a training config (HF TrainingArguments JSON/YAML, "
                                   "accelerate, DeepSpeed, torchtune, axolotl) and say whether "
                                   "it fits the GPU. Exit 0: fits, 1: does not, 2: bad input.")
    p.add_argument("path", metavar="CONFIG", type=Path, help="the training config file")
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", metavar="PRESET", help="a model preset (default: the one the "
                                                         "config names)")
    model.add_argument("--config", metavar="PATH", type=Path, help="the model's config.json")
    p.add_argument("--gpu", metavar="NAME", required=True, help="the GPU model to check on")
    p.add_argument("--gpus", type=_count, metavar="N",
                   help="GPUs in the run (default: the config's count, else 1)")
    p.add_argument("--method", choices=("full", "lora", "qlora"),
                   help="for configs that do not say (TrainingArguments, accelerate)")
    p.add_argument("--batch", type=_count, metavar="B", help="micro batch, where it does not say")
    p.add_argument("--seq", type=_count, metavar="S", help="sequence length, where it does not say")
    p.add_argument("--framework", metavar="NAME",
                   help="whose defaults fill what the config leaves unsaid (default: its format's)")
    p.add_argument("--margin", type=float, default=MARGIN, help="free fraction to keep")
    p.add_argument("--no-history", action="store_true", help="skip the calibrated prediction")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number of at least 1: {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from tracker.cli._checking import verdict

    try:
        report = verdict(args)
    except ValueError as err:  # ConfigError, ModelError, SetupError: one line each
        fail(str(err), code=2)
    if args.json:
        print_json(report)
    else:
        _print(report)
    return 0 if report["fits"] else 1


def _print(report: dict) -> None:
    s = report["setup"]
    print(f"{report['config']}: {report['format']} config, {report['model']['name']} "
          f"({report['model']['params'] / 1e9:.2f}B), {s['method']} {s['precision']}, micro batch "
          f"{s['micro_batch']} x accumulation {s['grad_accum']}, sequence {s['seq_len']}, "
          f"recompute {s['recompute']}, on {report['gpus']} x {report['gpu']} "
          f"({report['layout']})")
    if report["assumed"]:
        print(f"  assumed (the config does not say): {', '.join(report['assumed'])}")
    print()
    print_table(("component", "GiB"), list(report["breakdown_gib"].items()))
    verdict = "fits" if report["fits"] else "does NOT fit"
    print(f"\n{report['device_gib']:.2f} GiB per GPU ({report['lead']}) of "
          f"{report['capacity_gib']:g} GiB, {report['usable_gib']:.2f} usable with the "
          f"{report['margin']:.0%} margin: {verdict}")
