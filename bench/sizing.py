"""How well `headroom size` predicts published peak memory, judged by source it never saw.

Each row of ``bench/sizing_data.toml`` is one published measurement: every setup
fact its source states, written as ``headroom size`` flags (long names, ``-`` as
``_``), plus the counter read, the peak and a citation. The rows are parsed by
the real ``headroom size`` parser and built by the CLI's own functions, so the
model hears exactly what a user would type. A row using a flag the parser does
not know yet is reported as "not scored yet" and scored once the flag lands.

Per source and per method it prints the median absolute error and the share of
rows within 10 % for Headroom's analytical model, Headroom calibrated
leave-one-source-out (fitted on every other source, never on the source it
predicts), the step simulated on the model's code (rows that read the allocated
counter on one GPU) and the rules people use instead: accelerate's estimate-memory
("4x the weights for Adam", "+20 % for inference"), the seed article's
bytes-per-parameter table, LLaMA-Factory's table and EleutherAI's Transformer
Math 101. It also times an estimate and a plan (timings belong here, not in
unit tests). Run: ``PYTHONPATH=. .venv/bin/python bench/sizing.py [--rows] [--no-simulate]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.calibration import Calibration, Sample, held_out_fit  # noqa: E402
from core.gpus import catalog  # noqa: E402
from core.memory import GIB, ModelSpec, Setup, check, estimate, model_states  # noqa: E402
from core.models import spec_from_config  # noqa: E402
from core.planner import plan  # noqa: E402
from tracker.cli import common_options, size  # noqa: E402
from tracker.cli._sizing import build_setup, build_spec  # noqa: E402

DATA = Path(__file__).with_name("sizing_data.toml")
UNITS = {"B": 1 / GIB, "MB": 1e6 / GIB, "MiB": 1 / 1024, "GB": 1e9 / GIB, "GiB": 1.0}
NOT_FLAGS = {"source", "url", "experiment", "quote", "note", "counter", "unit", "peak", "scored",
             "model"}
METHODS = ("full", "lora", "qlora", "inference")
SCORED = "scored"


class NotYetSayable(Exception):
    """A row uses a flag or value `headroom size` does not accept (yet)."""


@dataclass
class Row:
    index: int
    source: str
    model: str
    method: str
    counter: str
    peak_gib: float
    gpu: str
    experiment: str = ""
    status: str = SCORED
    spec: ModelSpec | None = None
    setup: Setup | None = None
    config: dict | None = None  # the HF config of a [models.NAME] table

    @property
    def scored(self) -> bool:
        return self.status == SCORED


def load_rows(path: Path = DATA) -> list[Row]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    parser = size_parser()
    return [_row(i, r, data.get("models", {}), parser) for i, r in enumerate(data["row"])]


def size_parser() -> argparse.ArgumentParser:
    """The real `headroom size` parser, raising instead of exiting on a bad flag."""
    sub = argparse.ArgumentParser().add_subparsers()
    size.add_parser(sub, [common_options()])
    parser = sub.choices["size"]

    def refuse(message: str) -> NoReturn:  # "argument --optimizer: invalid choice: 'paged-adamw' (choose ..."
        match = re.match(r"argument (--[\w-]+).*?invalid choice: '([^']*)'", message)
        raise NotYetSayable(f"{match[1]} {match[2]}" if match else message)

    parser.error = refuse
    return parser


def _row(index: int, r: dict, tables: dict, parser: argparse.ArgumentParser) -> Row:
    row = Row(index, r["source"], r["model"], r.get("method", "full"), r["counter"],
              r["peak"] * UNITS[r["unit"]], r.get("gpu", ""),
              f"{r['source']}: {r.get('experiment') or index}")
    if not r.get("scored", True):
        row.status = "not scored (see its note)"
        return row
    try:
        args, extra = parser.parse_known_args(argv(r, tables))
        if extra:
            raise NotYetSayable(", ".join(a for a in extra if a.startswith("--")))
        spec = _table_spec(r["model"], tables[r["model"]]) if r["model"] in tables \
            else build_spec(args)
        setup = build_setup(args)
        check(spec, setup)
    except NotYetSayable as err:
        row.status = f"not scored yet: {err}"
    except ValueError as err:  # SetupError, ModelError: the facts do not add up for the model
        row.status = f"rejected: {err}"
    else:
        row.spec, row.setup = spec, setup
        row.config = tables[r["model"]]["config"] if r["model"] in tables else None
    return row


def argv(r: dict, tables: dict) -> list[str]:
    """A row's `headroom size` arguments: every fact it states, as the user would type it."""
    out = [] if r["model"] in tables else ["--model", r["model"]]
    for key, value in r.items():
        if key in NOT_FLAGS or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _table_spec(name: str, table: dict) -> ModelSpec:
    return spec_from_config(table["config"], name, table["n_params"], table["source"])


# ---- predictions


def analytical(row: Row, _: dict[str, Calibration]) -> float:
    return estimate(row.spec, row.setup).reading(row.counter) / GIB


def simulated(row: Row, _: dict[str, Calibration]) -> float | None:
    """The simulated step on the model's own code, for rows that read PyTorch's allocated
    counter on one GPU; plus the fixed cuBLAS/attention workspace a fake step never allocates."""
    from tracker.simulate import SimulationError, simulate

    if row.counter != "allocated":
        return None
    try:
        found = simulate(row.spec, row.setup, config=row.config).allocated
    except SimulationError:
        return None
    return (found + estimate(row.spec, row.setup).breakdown["overhead"]) / GIB


def calibrated(row: Row, fits: dict[str, Calibration]) -> float:
    """Fitted on every other source's rows, then asked about this one."""
    found = fits[row.source].predict(row.spec, row.setup, row.gpu, row.counter)
    return found.gib if found else analytical(row, fits)


def leading(row: Row, fits: dict[str, Calibration]) -> float:
    """What `headroom size` leads with: the calibrated figure where its fit is trusted (checked
    on experiments of the other sources, one held out at a time), else the analytical one."""
    found = fits[row.source].predict(row.spec, row.setup, row.gpu, row.counter)
    return found.gib if found and found.trusted else analytical(row, fits)


def leave_one_source_out(rows: list[Row]) -> dict[str, Calibration]:
    """Per source, a fit of every other source's rows, its trust checked by experiment."""
    samples = [Sample(r.index, r.spec, r.setup, r.gpu, r.counter, r.peak_gib, name=r.source,
                      experiment=r.experiment) for r in rows if r.scored]
    return {source: held_out_fit([s for s in samples if s.name != source])
            for source in dict.fromkeys(r.source for r in rows if r.scored)}


def _shards(row: Row) -> float:
    """Simple rules are per model; give them the data/model sharding the run used."""
    lay = row.setup.layout
    return lay.tp * lay.pp * (lay.dp if lay.shards_params else 1)


def _weights_gib(row: Row, bytes_per_param: float) -> float:
    return row.spec.total_params * bytes_per_param / GIB / _shards(row)


def _storage_bytes(row: Row) -> float:
    s = row.setup
    if s.method == "qlora" or s.precision == "nf4":
        return 0.5
    if s.precision == "int8":
        return 1.0
    return 4.0 if s.precision == "fp32" else 2.0


def accelerate_rule(row: Row, _: dict) -> float:
    """accelerate estimate-memory: training with Adam = 4 x the model's size in its dtype;
    inference = the model's size + 20 %; it has no notion of adapters (load size)."""
    size_gib = _weights_gib(row, _storage_bytes(row))
    return {"full": 4 * size_gib, "inference": 1.2 * size_gib}.get(row.setup.method, size_gib)


def seed_table(row: Row, _: dict) -> float | None:
    """The seed article's sizing step 1: 20 B/param for training, 4-6 (5) for LoRA, 2 to infer."""
    per = {"full": 20.0, "lora": 5.0, "inference": 2.0}.get(row.setup.method)
    return None if per is None else _weights_gib(row, per)


def llama_factory_table(row: Row, _: dict) -> float | None:
    """LLaMA-Factory's README: full AMP 18x GB, pure bf16 8x, LoRA 2x, QLoRA 8-bit x, 4-bit x/2."""
    s = row.setup
    if s.method == "full":
        per = 18.0 if s.precision.startswith("mixed") or s.precision in ("fp32", "fp8") else 8.0
    elif s.method == "lora":
        per = 2.0
    elif s.method == "qlora":
        per = 1.0 if s.precision == "int8" else 0.5
    else:
        return None
    return _weights_gib(row, per)  # "x GB for an x-billion model" is bytes per parameter


def eleutherai_rule(row: Row, _: dict) -> float:
    """Transformer Math 101: 16 B/param for mixed AdamW (weights, grads, 12 B of optimizer),
    weights + 16 B per trainable parameter for adapters, 1.2 x weights for inference."""
    s = row.setup
    weights = _weights_gib(row, _storage_bytes(row))
    if s.method == "full":
        return _weights_gib(row, 16.0)
    if s.method in ("lora", "qlora"):
        return weights + row.spec.lora_params(s.lora_rank, s.lora_targets) * 16 / GIB
    return 1.2 * weights


PREDICTORS: dict[str, Callable[[Row, dict[str, Calibration]], float | None]] = {
    "Headroom": analytical,
    "simulated": simulated,
    "calibrated": calibrated,
    "leads": leading,
    "accelerate 4x": accelerate_rule,
    "seed B/param": seed_table,
    "LLaMA-Factory": llama_factory_table,
    "EleutherAI": eleutherai_rule,
}


# ---- report


def errors(rows: list[Row], fits: dict[str, Calibration]) -> dict[str, dict[int, float]]:
    """Signed relative error (predicted / measured - 1) per predictor and scored row."""
    out: dict[str, dict[int, float]] = {name: {} for name in PREDICTORS}
    for row in (r for r in rows if r.scored):
        for name, predict in PREDICTORS.items():
            value = predict(row, fits)
            if value is not None:
                out[name][row.index] = value / row.peak_gib - 1
    return out


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    within = sum(abs(v) <= 0.10 for v in values) / len(values)
    return f"{100 * statistics.median(abs(v) for v in values):5.1f}% {100 * within:3.0f}%"


def _line(label: str, ids: list[int], table: dict[str, dict[int, float]]) -> str:
    cells = [_cell([errs[i] for i in ids if i in errs]) for errs in table.values()]
    return f"{label:24}" + "".join(f" {c:>14}" for c in cells)


def report(rows: list[Row], fits: dict[str, Calibration]) -> dict[str, dict[int, float]]:
    table = errors(rows, fits)
    scored = [r for r in rows if r.scored]
    print(_counts(rows))
    print("\nMedian absolute error and share of rows within 10 %; the calibrated model is "
          "fitted leave-one-source-out\n(on every other source); 'leads': what `headroom size` "
          "shows first, calibrated only where that fit\nis trusted on held-out experiments; "
          "'-': the rule does not cover the method.\n")
    print(f"{'':24}" + "".join(f" {name:>14}" for name in PREDICTORS))
    print(_line(f"all ({len(scored)})", [r.index for r in scored], table))
    print("by source")
    for source in dict.fromkeys(r.source for r in scored):
        ids = [r.index for r in scored if r.source == source]
        print(_line(f"  {source} ({len(ids)})", ids, table))
    print("by method")
    for method in METHODS:
        ids = [r.index for r in scored if r.setup.method == method]
        print(_line(f"  {method} ({len(ids)})", ids, table))
    _overall(rows, table)
    _simulated(rows, table)
    return table


def _counts(rows: list[Row]) -> str:
    scored = [r for r in rows if r.scored]
    yet = Counter(flag for r in rows if r.status.startswith("not scored yet")
                  for flag in r.status.removeprefix("not scored yet: ").split(", "))
    rejected = sum(r.status.startswith("rejected") for r in rows)
    skipped = sum(r.status.startswith("not scored (") for r in rows)
    lines = [f"{len(rows)} published peaks from {len({r.source for r in rows})} sources; "
             f"{len(scored)} scored, from {len({r.source for r in scored})} sources",
             f"  {skipped} not scored: the source omits micro batch or sequence, or states a fact "
             "no flag can say",
             f"  {sum(r.status.startswith('not scored yet') for r in rows)} not scored yet, "
             "waiting for a flag or value `headroom size` lacks: "
             + (", ".join(f"{k} ({n})" for k, n in yet.most_common()) or "none"),
             f"  {rejected} rejected by `headroom size` (see --rows)"]
    return "\n".join(lines)


def _simulated(rows: list[Row], table: dict[str, dict[int, float]]) -> None:
    if "simulated" not in table:
        return
    ids = list(table["simulated"])
    print(f"Simulated step on the {len(ids)} one-GPU rows that read the allocated counter and "
          f"that it can run: {_cell(list(table['simulated'].values()))}; analytical on the same "
          f"rows {_cell([table['Headroom'][i] for i in ids])}")
    below = [r.index for r in rows if r.index in table["simulated"] and below_states(r)]
    if below:
        rest = [i for i in ids if i not in below]
        print(f"  {len(below)} of them (rows {', '.join(map(str, below))}) published a peak below "
              "the stated setup's own weights, gradients and optimizer state, which no step of "
              f"that setup can reach; on the other {len(rest)}: simulated "
              f"{_cell([table['simulated'][i] for i in rest])}, analytical "
              f"{_cell([table['Headroom'][i] for i in rest])}")
    for source in dict.fromkeys(r.source for r in rows if r.index in table["simulated"]):
        own = [r.index for r in rows if r.source == source and r.index in table["simulated"]
               and r.index not in below]
        print(f"  {source} ({len(own)}): simulated {_cell([table['simulated'][i] for i in own])}")


def below_states(row: Row) -> bool:
    """The published peak is below what the stated setup keeps for its whole run (weights,
    gradients, optimizer state): the row's facts contradict its figure."""
    states = sum(model_states(row.spec, row.setup).values()) / GIB
    return row.counter == "allocated" and row.peak_gib < states


def _overall(rows: list[Row], table: dict[str, dict[int, float]]) -> None:
    by_source = {}
    for name in ("Headroom", "calibrated", "leads"):
        medians = [statistics.median(abs(table[name][r.index]) for r in rows
                                     if r.scored and r.source == source)
                   for source in dict.fromkeys(r.source for r in rows if r.scored)]
        by_source[name] = 100 * statistics.median(medians)
    print(f"\nOverall, leave-one-source-out: analytical {_cell(list(table['Headroom'].values()))},"
          f" calibrated {_cell(list(table['calibrated'].values()))}, leading figure "
          f"{_cell(list(table['leads'].values()))} (median, within 10 %); median of the "
          f"per-source medians: analytical {by_source['Headroom']:.1f} %, calibrated "
          f"{by_source['calibrated']:.1f} %, leading {by_source['leads']:.1f} %")


def per_row(rows: list[Row], table: dict[str, dict[int, float]]) -> None:
    print(f"\n{'row':>3}  {'source':11} {'model':24} {'method':9} {'counter':9} {'measured':>8} "
          f"{'analytic':>8} {'calib.':>8} {'error':>7} {'sim.':>8}")
    for row in rows:
        head = f"{row.index:>3}  {row.source[:11]:11} {row.model[:24]:24} {row.method:9} "
        if not row.scored:
            print(head + f"{row.counter:9} {row.peak_gib:8.2f}  {row.status}")
            continue
        a = (1 + table["Headroom"][row.index]) * row.peak_gib
        c = (1 + table["calibrated"][row.index]) * row.peak_gib
        sim = table.get("simulated", {}).get(row.index)
        print(head + f"{row.counter:9} {row.peak_gib:8.2f} {a:8.2f} {c:8.2f} "
              f"{100 * table['Headroom'][row.index]:+6.0f}% "
              + ("       -" if sim is None else f"{(1 + sim) * row.peak_gib:8.2f}"))


def timings() -> None:
    from core.models import preset

    spec = preset("llama-3.1-70b")
    setup = Setup(method="lora", micro_batch=4, seq_len=4096)
    n = 2000
    start = time.perf_counter()
    for i in range(n):
        estimate(spec, setup.but(micro_batch=1 + i % 8))
    per_estimate = (time.perf_counter() - start) / n
    start = time.perf_counter()
    plan(spec, setup, catalog().values(), max_gpus=16)
    planning = time.perf_counter() - start
    print(f"\nestimate: {per_estimate * 1e6:.0f} us each; plan over the whole catalog "
          f"(16-GPU budget): {planning * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="also print every row")
    parser.add_argument("--no-simulate", action="store_true",
                        help="skip the simulated step (minutes on two cores)")
    args = parser.parse_args()
    if args.no_simulate:
        del PREDICTORS["simulated"]
    start = time.perf_counter()
    rows = load_rows()
    fits = leave_one_source_out(rows)
    table = report(rows, fits)
    if args.rows:
        per_row(rows, table)
    print(f"\nbench: {time.perf_counter() - start:.1f} s for the rows, fits and predictions")
    timings()


if __name__ == "__main__":
    main()
