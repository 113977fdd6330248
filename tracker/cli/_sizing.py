"""The work behind ``headroom size``: build the model and setup, predict, check GPUs, plan."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from core.calibration import Calibration
from core.gpus import GPU, catalog, find
from core.memory import GIB, ModelSpec, Setup, check, estimate
from core.memory.setup import Layout, SetupError
from core.models import ModelError, from_config_file, from_params, preset, presets
from core.planner import LEVELS, Plan
from core.sizing import CardAnswer, Sizer, planned_setup
from tracker.db.engine import default_url

_ARCH_FIELDS = {"layers": "n_layers", "hidden": "hidden", "heads": "n_heads",
                "kv_heads": "n_kv_heads", "vocab": "vocab", "intermediate": "intermediate"}


def build_spec(args: argparse.Namespace) -> ModelSpec:
    given = {field: getattr(args, arg) for arg, field in _ARCH_FIELDS.items()
             if getattr(args, arg) is not None}
    if args.model:
        spec = preset(args.model)
    elif args.config:
        spec = from_config_file(Path(args.config))
    elif args.params:
        spec = from_params(args.params)
    elif {"n_layers", "hidden", "n_heads", "vocab"} <= set(given):
        spec = ModelSpec("custom", "llama", given["n_layers"], given["hidden"], given["n_heads"],
                         given["n_heads"], given["hidden"] // given["n_heads"], given["vocab"],
                         4 * given["hidden"], source="command line")
    else:
        raise ModelError("give --model, --config or --params (or --layers --hidden --heads "
                         "--vocab for an architecture of your own)")
    if not given:
        return spec
    if "n_heads" in given and "n_kv_heads" not in given and spec.n_kv_heads == spec.n_heads:
        given["n_kv_heads"] = given["n_heads"]
    hidden, heads = given.get("hidden", spec.hidden), given.get("n_heads", spec.n_heads)
    if hidden % heads:
        raise SetupError(f"--hidden {hidden} is not divisible by {heads} heads")
    kv_heads = given.get("n_kv_heads", spec.n_kv_heads)
    if kv_heads > heads:
        raise SetupError(f"more KV heads ({kv_heads}) than heads ({heads})")
    if heads % kv_heads:
        raise SetupError(f"{heads} heads are not divisible into {kv_heads} KV heads (each KV head "
                         "serves a whole group of heads)")
    reshaped = "hidden" in given or "n_heads" in given
    head_dim = hidden // heads if reshaped else spec.head_dim
    # An overridden architecture no longer has the preset's exact count.
    return replace(spec, **given, head_dim=head_dim, n_params=None,
                   note=(spec.note + "; " if spec.note else "") + "architecture overridden")


def build_setup(args: argparse.Namespace) -> Setup:
    """The setup the flags state; ``--framework``'s defaults fill what they leave unsaid."""
    layout = Layout(
        n_gpus=args.gpus, zero=args.zero, fsdp=args.fsdp, offload_optimizer=args.offload,
        offload_params=args.offload_params, tp=args.tp, pp=args.pp, cp=args.cp,
        sequence_parallel=args.sp,
        pp_schedule="interleaved" if args.interleave else "1f1b",
        virtual_stages=args.interleave or 1,
    )
    adapter = {"fp32": True, "bf16": False}.get(args.adapter_dtype)
    return planned_setup(
        args.method, args.framework, layout,
        precision="fp8" if args.fp8 else args.precision, optimizer=args.optimizer,
        lora_rank=args.lora_rank, lora_targets=args.lora_targets,
        lora_dropout=False if args.no_lora_dropout else None, adapter_fp32=adapter,
        quant_type=args.quant_type, double_quant=not args.no_double_quant,
        micro_batch=args.batch, seq_len=args.seq, grad_accum=args.grad_accum,
        recompute=args.recompute or ("full" if args.grad_checkpointing else None),
        attention=args.attention, loss=args.loss, activation_offload=args.activation_offload,
        optimizer_in_backward=args.optimizer_in_backward, compile=args.compile,
    )


def size(args: argparse.Namespace) -> dict[str, Any]:
    """The report of ``headroom size`` as plain data (what --json prints)."""
    spec, setup = build_spec(args), build_setup(args)
    check(spec, setup)
    gpu = gpu_named(args.gpu)
    est = estimate(spec, setup)
    sizer = Sizer(spec, None if args.no_history else history(args.db), args.margin)
    fits = [sizer.fit(setup, g) for g in catalog().values()]
    tokens = args.tokens or 0.0
    plans, answer = _plans(args, sizer, setup, gpu)
    card = _card_dict(answer, tokens) if answer else None
    check_ = sizer.check(setup, gpu) if gpu else None
    exported = _export(spec, plans, args) if args.export else None
    return {
        "model": model_dict(spec),
        "setup": setup_dict(setup),
        "trainable_params": est.trainable_params,
        "phase": est.phase,
        "breakdown_gib": rounded(est.gib()),
        "allocated_gib": round(est.allocated / GIB, 3),
        "reserved_gib": round(est.reserved / GIB, 3),
        "device_gib": round(est.device / GIB, 3),
        "notes": list(est.notes) + ([spec.note] if spec.note else []),
        "calibrated": _calibrated_dict(sizer.calibrated(setup, gpu.name if gpu else "")),
        "uncalibrated": sizer.uncalibrated(setup) or None,
        "leads": check_.lead if check_ else "analytical",
        "fits": [rounded(asdict(f)) for f in fits],
        "plans": [_plan_dict(p, tokens) for p in plans],
        **({"fit_to_card": card} if card is not None else {}),
        **({"simulated": _simulated(spec, setup)} if getattr(args, "simulate", False) else {}),
        **({"export": exported} if exported is not None else {}),
    }


def _plans(args: argparse.Namespace, sizer: Sizer, setup: Setup,
           gpu: GPU | None) -> tuple[list[Plan], CardAnswer | None]:
    """The plans to show, level by level (the order the table numbers them in)."""
    if args.fit_to_card:
        if gpu is None:
            raise SetupError("--fit-to-card needs the card: --gpu NAME (and --gpus N)")
        answer = sizer.fit_to_card(setup, gpu, args.gpus, args.global_batch)
        plans = ([answer.best] if answer.best else answer.changes) + (
            [answer.more_cards] if answer.more_cards else [])
    else:
        answer = None
        plans = sizer.plans(setup, [gpu] if gpu else list(catalog().values()), args.max_gpus,
                            args.global_batch)
    return sorted(plans, key=lambda p: p.level), answer


def _export(spec: ModelSpec, plans: list[Plan], args: argparse.Namespace) -> dict[str, Any]:
    """Plan number ``args.plan`` in ``args.export``'s format, as --json shows it."""
    from core.export import Target, export

    if not plans:
        raise SetupError("no plan fits, so there is nothing to export")
    if args.plan > len(plans):
        raise SetupError(f"--plan {args.plan}: there are {len(plans)} plans")
    done = export(Target.of(spec, plans[args.plan - 1]), args.export)
    return {"format": done.format, "plan": args.plan, "plan_hash": done.plan_hash,
            "filename": done.filename, "notes": list(done.notes), "text": done.text}


def write_export(exported: dict[str, Any], path: Path | None, as_json: bool) -> int:
    """The config to ``path`` (or stdout); what it leaves to the user goes to stderr."""
    from tracker.cli._output import fail, print_json

    if path is not None:
        try:
            path.write_text(exported["text"], encoding="utf-8")
        except OSError as err:
            fail(f"cannot write {path}: {err.strerror or err}", code=2)
        exported = {**exported, "path": str(path)}
    if as_json:
        print_json(exported)
    elif path is None:
        sys.stdout.write(exported["text"])
    for note in exported["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if path is not None and not as_json:
        print(f"wrote plan {exported['plan_hash']} as {exported['format']} to {path}",
              file=sys.stderr)
    return 0


def _simulated(spec: ModelSpec, setup: Setup) -> dict[str, Any]:
    """The simulated step (``--simulate``), or why it could not run."""
    from tracker.simulate import SimulationError, simulate

    try:
        return simulate(spec, setup).as_dict()
    except SimulationError as err:
        return {"error": str(err)}


def gpu_named(name: str | None) -> GPU | None:
    if not name:
        return None
    gpu = find(name)
    if gpu is None:
        raise SetupError(f"unknown GPU {name!r}; `headroom size --list-gpus` shows the catalog")
    return gpu


def history(db: str | None) -> Calibration | None:
    """A fit of the user's recorded runs, or None when there is no database or no peak."""
    url = db or default_url()
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return None
    from tracker.calibration import calibrate
    from tracker.cli._output import open_store

    store = open_store(db)
    try:
        calibration, _ = calibrate(store, with_errors=False)
    finally:
        store.close()
    return calibration if calibration.samples else None


def rounded(values: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in values.items()}


def model_dict(spec: ModelSpec) -> dict[str, Any]:
    return {"name": spec.name, "family": spec.family, "params": spec.total_params,
            "layers": spec.n_layers, "hidden": spec.hidden, "heads": spec.n_heads,
            "kv_heads": spec.n_kv_heads, "head_dim": spec.head_dim, "vocab": spec.vocab,
            "intermediate": spec.intermediate, "tied_embeddings": spec.tied_embeddings,
            "experts": spec.n_experts, "active_experts": spec.n_active_experts,
            "source": spec.source, "note": spec.note or None}


def setup_dict(setup: Setup) -> dict[str, Any]:
    out = asdict(setup)
    out["layout"] = {**asdict(setup.layout), "dp": setup.layout.dp}
    return out


def _calibrated_dict(found) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"counter": found.counter, "gib": round(found.gib, 3),
            "low_gib": round(found.low_gib, 3), "high_gib": round(found.high_gib, 3),
            "allocated_gib": round(found.readings["allocated"], 3),
            "reserved_gib": round(found.readings["reserved"], 3),
            "device_gib": round(found.readings["device"], 3),
            "group": found.group, "runs": list(found.run_ids), "trusted": found.trusted,
            "why": found.why}


def _plan_dict(p, tokens: float = 0.0) -> dict[str, Any]:
    s = p.setup
    hours, cost = p.hours(tokens), p.cost(tokens)
    return {"gpu": p.gpu, "gpus": p.n_gpus, "nodes": p.nodes, "layout": p.layout,
            "level": LEVELS[p.level], "summary": p.summary, "method": s.method,
            "precision": s.precision, "optimizer": s.optimizer, "recompute": s.recompute,
            "loss": s.loss, "activation_offload": s.activation_offload,
            "micro_batch": s.micro_batch, "grad_accum": s.grad_accum,
            "global_batch": p.global_batch, "seq_len": s.seq_len,
            "zero": s.layout.zero, "fsdp": s.layout.fsdp, "tp": s.layout.tp, "pp": s.layout.pp,
            "dp": s.layout.dp, "sequence_parallel": s.layout.sequence_parallel,
            "offload_optimizer": s.layout.offload_optimizer,
            "offload_params": s.layout.offload_params,
            "host_ram_gib": round(p.host_ram_gib, 1),
            "offload_s_per_step": round(p.offload_s_per_step, 3),
            "device_gib": round(p.device_gib, 3), "capacity_gib": p.capacity_gib,
            "fits": p.fits, "max_micro_batch": p.max_micro_batch, "max_seq_len": p.max_seq_len,
            "tokens_per_s": round(p.tokens_per_s, 1), "speed": round(p.speed, 3),
            "usd_per_hour": round(p.usd_per_hour, 2) or None,
            "hours": round(hours, 2) if hours else None, "cost": round(cost, 2) if cost else None,
            "changes": list(p.changes), "warnings": list(p.warnings)}


def _card_dict(answer, tokens: float) -> dict[str, Any]:
    """The --fit-to-card answer: the best setup on these cards, or what would make it fit."""
    best = answer.best
    return {"gpu": answer.gpu, "gpus": answer.n_gpus, "fits": answer.fits,
            "best": _plan_dict(best, tokens) if best else None,
            "max_micro_batch": best.max_micro_batch if best else 0,
            "max_seq_len": best.max_seq_len if best else 0,
            "knobs": list(best.changes) if best else [],
            "if_you_change": [_plan_dict(p, tokens) for p in answer.changes],
            "more_cards": _plan_dict(answer.more_cards, tokens) if answer.more_cards else None}


def print_report(report: dict[str, Any], table) -> None:
    m, s = report["model"], report["setup"]
    print(f"{m['name']}: {m['params'] / 1e9:.2f}B params ({report['trainable_params']:,} "
          f"trainable), {s['method']} {s['precision']}, batch {s['micro_batch']} x "
          f"{s['seq_len']} tokens, {s['optimizer']}")
    for note in report["notes"]:
        print(f"  note: {note}")
    print()
    table(("component", "GiB"), list(report["breakdown_gib"].items()))
    print(f"\nper GPU at the peak ({report['phase']}): allocated {report['allocated_gib']:.2f} "
          f"GiB, reserved {report['reserved_gib']:.2f} GiB, device {report['device_gib']:.2f} GiB")
    _print_simulated(report)
    cal = report["calibrated"]
    if cal:
        verdict = "trusted" if cal["trusted"] else "a hint, not trusted"
        print(f"calibrated on your runs ({cal['group']}): {cal['gib']:.2f} GiB "
              f"[{cal['low_gib']:.2f} - {cal['high_gib']:.2f}], from runs "
              f"{', '.join(map(str, cal['runs']))}: {verdict} ({cal['why']})")
    else:
        print(f"calibrated: {report['uncalibrated']}")
    print()
    rows = [(f["gpu"], "yes" if f["fits"] else "no", f["headroom_gib"], f["max_micro_batch"])
            for f in report["fits"]]
    table(("GPU", "fits", "headroom GiB", "max batch"), rows)
    if report.get("fit_to_card"):
        _print_card(report["fit_to_card"])
    if report["plans"]:
        _print_plans(report["plans"], table)


def _print_plans(plans: list[dict[str, Any]], table) -> None:
    for level in LEVELS:
        rows = [(n, p["gpu"], p["gpus"], p["layout"], f"{p['micro_batch']} x {p['grad_accum']}",
                 p["device_gib"], int(p["tokens_per_s"]), f"{p['speed']:.0%}",
                 f"{p['host_ram_gib']:g}" if p["host_ram_gib"] else "",
                 f"${p['cost']:,.0f}" if p["cost"] else "", p["summary"])
                for n, p in enumerate(plans, 1) if p["level"] == level]
        if rows:
            title = {"keeps the experiment": "Plans that keep the experiment",
                     "changes the optimizer": "Plans that change the optimizer",
                     "changes the experiment": "If you can change the experiment"}[level]
            print(f"\n{title}:")
            table(("#", "GPU", "GPUs", "layout", "micro x accum", "GiB/GPU", "tok/s", "speed",
                   "host RAM GiB/node", "cost", "changes"), rows)


def _print_card(card: dict[str, Any]) -> None:
    print()
    if card["fits"]:
        best = card["best"]
        print(f"{card['gpus']} x {card['gpu']} runs it: {best['summary']}; largest micro batch "
              f"{card['max_micro_batch']}, longest sequence {card['max_seq_len']:,} with those "
              "settings")
        return
    print(f"{card['gpus']} x {card['gpu']} cannot keep this experiment.")
    for p in card["if_you_change"][:3]:
        print(f"  it fits if you change: {p['summary']}")
    more = card["more_cards"]
    if more:
        print(f"  or with {more['gpus']} x {more['gpu']} ({more['layout']}): {more['summary']}")


def _print_simulated(report: dict[str, Any]) -> None:
    sim = report.get("simulated")
    if sim is None:
        return
    if "error" in sim:
        print(f"simulated: {sim['error']}")
        return
    analytical = report["allocated_gib"] - report["breakdown_gib"]["overhead"]
    parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in sim["breakdown_gib"].items())
    print(f"simulated on the model's code ({sim['phase']}, {sim['seconds']:.1f} s): allocated "
          f"{sim['allocated_gib']:.2f} GiB against the analytical {analytical:.2f} GiB without "
          f"workspace ({parts})")
    for note in sim["notes"]:
        print(f"  simulation: {note}")


def list_models(as_json: bool) -> int:
    from tracker.cli._output import print_json, print_table

    rows = [(p.name, p.family, round(p.n_params / 1e9, 3), p.source) for p in presets().values()]
    if as_json:
        print_json([dict(zip(("name", "family", "params_b", "source"), r, strict=True))
                    for r in rows])
    else:
        print_table(("model", "family", "params (B)", "source"), rows)
    return 0


def list_gpus(as_json: bool) -> int:
    from tracker.cli._output import print_json, print_table

    gpus = list(catalog().values())
    if as_json:
        print_json([asdict(g) for g in gpus])
    else:
        print_table(("GPU", "GiB", "TB/s", "bf16 TFLOP/s", "fp8 TFLOP/s", "link"),
                    [(g.name, g.memory_gib, g.bandwidth_tbs, g.bf16_tflops, g.fp8_tflops,
                      f"{g.link} {g.link_gbs:g} GB/s") for g in gpus])
    return 0
