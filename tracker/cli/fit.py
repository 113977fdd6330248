"""``headroom fit``: calibrate the memory model on the stored runs and show how well it does."""

from __future__ import annotations

import argparse

from tracker.cli import command_parser
from tracker.cli._output import fail, find_run, open_store, print_json, print_table


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "fit", parents,
                       description="Fit the memory model's coefficients to the runs' peaks, "
                                   "per framework x GPU x attention group, with errors measured "
                                   "one experiment at a time held out, and whether each group "
                                   "is trusted.")
    p.add_argument("--exclude", metavar="RUN", action="append", default=[],
                   help="keep a run out of the fit from now on (id or name)")
    p.add_argument("--include", metavar="RUN", action="append", default=[],
                   help="let an excluded run back into the fit")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.calibration import trust
    from tracker.calibration import calibrate, plan_outcomes

    store = open_store(args.db)
    for ref, exclude in [(r, True) for r in args.exclude] + [(r, False) for r in args.include]:
        store.set_exclude_from_fit(find_run(store, ref).id, exclude)
    calibration, collected = calibrate(store)
    groups = calibration.ranked_groups()
    planned = plan_outcomes(store)
    if args.json:
        print_json({
            "groups": [_group_dict(g) for g in groups],
            "runs_used": sorted({s.run_id for s in calibration.samples}),
            "skipped": {str(k): v for k, v in sorted(collected.skipped.items())},
            "mfu_by_gpu": calibration.mfu_by_gpu,
            "plans": planned,
        })
        return 0
    if not groups:
        fail("no stored run has both a shape and a memory peak (or an OOM) to fit; "
             "ingest logs that record memory (`headroom ingest PATH`)")
    rows = [(g.label, len(set(g.run_ids)), g.experiments, *(round(v, 3) for v in g.theta),
             _pct(g.held_out_error), _pct(g.prior_error), "yes" if trust(g)[0] else "no")
            for g in groups]
    print_table(("group", "runs", "experiments", "act x", "logits x", "offset GiB", "reserved x",
                 "context GiB", "held-out error", "uncalibrated", "trusted"), rows)
    print()
    for g in groups:
        print(f"{g.label}: {trust(g)[1]}")
    if planned:
        print("\nRuns launched from a plan (predicted per GPU vs the recorded peak):")
        print_table(("run", "plan", "predicted GiB", "peak GiB", "counter", "error"),
                    [(p["name"], p["plan"], p["predicted_gib"], p["peak_gib"], p["counter"],
                      _pct(p["error"])) for p in planned])
    if collected.skipped:
        print(f"\n{len(collected.skipped)} run(s) not used:")
        for run_id, why in sorted(collected.skipped.items()):
            print(f"  {run_id}: {why}")
    return 0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _group_dict(g) -> dict:
    from core.calibration import trust

    trusted, why = trust(g)
    return {"group": list(g.key), "label": g.label, "runs": sorted(set(g.run_ids)),
            "experiments": g.experiments, "coefficients": g.coefficients, "noise": g.noise,
            "interval": g.interval, "held_out_error": g.held_out_error,
            "uncalibrated_error": g.prior_error, "trusted": trusted, "why": why}
