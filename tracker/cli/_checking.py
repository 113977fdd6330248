"""The work behind ``headroom check``: read the config, resolve model and GPU, size it."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from core.memory import ModelSpec, check, estimate
from core.models import ModelError, from_config_file, preset
from core.sizing import Sizer
from tracker.check import Stated, read_config, setup_for
from tracker.cli._sizing import gpu_named, history, model_dict, rounded, setup_dict


def verdict(args: argparse.Namespace) -> dict[str, Any]:
    """The report ``headroom check --json`` prints (ValueError: one line for the user)."""
    if not args.path.is_file():
        raise ModelError(f"no such config file: {args.path}")
    gpu = gpu_named(args.gpu)
    stated = read_config(args.path)
    given = {"method": args.method, "micro_batch": args.batch, "seq_len": args.seq}
    stated = replace(stated, fields={**stated.fields,
                                     **{k: v for k, v in given.items() if v is not None}})
    spec = _spec(args, stated)
    setup, assumed = setup_for(stated, gpu, args.gpus, args.framework)
    check(spec, setup)
    sizer = Sizer(spec, None if args.no_history else history(args.db), args.margin)
    found = sizer.check(setup, gpu)
    est = estimate(spec, setup)
    usable = (1 - args.margin) * gpu.memory_gib
    return {
        "config": str(args.path), "format": stated.format, "framework": setup.framework,
        "model": model_dict(spec), "gpu": gpu.name, "gpus": setup.layout.n_gpus,
        "layout": setup.layout.describe(), "setup": setup_dict(setup),
        "stated": sorted(stated.fields), "assumed": assumed,
        "breakdown_gib": rounded(est.gib()), "device_gib": round(found.device_gib, 3),
        "lead": found.lead, "capacity_gib": gpu.memory_gib, "usable_gib": round(usable, 3),
        "margin": args.margin, "headroom_gib": round(usable - found.device_gib, 3),
        "fits": found.fits,
    }


def _spec(args: argparse.Namespace, stated: Stated) -> ModelSpec:
    if args.model:
        return preset(args.model)
    if args.config:
        return from_config_file(args.config)
    if stated.model is None:
        raise ModelError(f"{stated.path.name} names no model: give --model PRESET or "
                         "--config PATH")
    try:
        return preset(stated.model)
    except ModelError:
        raise ModelError(f"{stated.path.name} names the model {stated.model!r}, which is no "
                         "preset: give --model PRESET or --config PATH") from None
