"""How well Headroom predicts published peak memory, beside the simple rules people use.

Reads ``bench/sizing_data.toml`` (published measurements with their setups) and
prints, per method and overall, the median absolute percentage error of:
Headroom's analytical model, Headroom calibrated leave-one-out (fitted on every
other row, never the row it predicts), accelerate's estimate-memory rules
("4x the weights for Adam", "+20 % for inference"), the seed article's
bytes-per-parameter table, LLaMA-Factory's table and EleutherAI's Transformer
Math 101 accounting. It also times an estimate and a plan (timings belong
here, not in unit tests). Run: ``.venv/bin/python bench/sizing.py [--rows]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.calibration import Sample, fit  # noqa: E402
from core.gpus import catalog  # noqa: E402
from core.memory import GIB, Layout, ModelSpec, Setup, estimate  # noqa: E402
from core.models import preset, spec_from_config  # noqa: E402
from core.planner import plan  # noqa: E402

DATA = Path(__file__).with_name("sizing_data.toml")
UNITS = {"GB": 1e9 / GIB, "GiB": 1.0, "MiB": 1 / 1024, "MB": 1e6 / GIB}
METHODS = ("full", "lora", "qlora", "inference")


@dataclass
class Row:
    index: int
    spec: ModelSpec
    setup: Setup
    gpu: str
    counter: str
    peak_gib: float
    source: str


def load_rows(path: Path = DATA) -> list[Row]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    models = {name: spec_from_config(m["config"], name, m["n_params"], m["source"])
              for name, m in data["models"].items()}
    return [_row(i, r, models) for i, r in enumerate(data["row"])]


def _row(index: int, r: dict, models: dict[str, ModelSpec]) -> Row:
    spec = models.get(r["model"]) or preset(r["model"])
    method = r["method"]
    layout = Layout(n_gpus=r.get("n_gpus", 1), fsdp=r.get("fsdp"), tp=r.get("tp", 1),
                    sequence_parallel=r.get("tp", 1) > 1)
    setup = Setup(
        method=method, precision=r["precision"],
        optimizer=r.get("optimizer", "none" if method == "inference" else "adamw"),
        lora_rank=r.get("lora_rank", 16), lora_targets=r.get("lora_targets", "all-linear"),
        quant_type=r.get("quant_type", "nf4"), double_quant=r.get("double_quant", True),
        micro_batch=r["micro_batch"], seq_len=r["seq_len"], grad_accum=r.get("grad_accum", 1),
        recompute=r.get("recompute", "none"), attention=r.get("attention", "sdpa"),
        fused_loss=r.get("no_lm_head", False), framework=r["framework"], layout=layout,
    )
    return Row(index, spec, setup, r.get("gpu", ""), r["counter"],
               r["peak"] * UNITS[r["unit"]], r["source"])


# ---- predictions


def analytical(row: Row, _: list[Row]) -> float:
    return estimate(row.spec, row.setup).reading(row.counter) / GIB


def calibrated(row: Row, rows: list[Row]) -> float:
    """Fitted on every other row (leave-one-out), then asked about this one."""
    others = [Sample(r.index, r.spec, r.setup, r.gpu, r.counter, r.peak_gib)
              for r in rows if r.index != row.index]
    found = fit(others).predict(row.spec, row.setup, row.gpu, row.counter)
    return found.gib if found else analytical(row, rows)


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


def accelerate_rule(row: Row, _: list[Row]) -> float:
    """accelerate estimate-memory: training with Adam = 4 x the model's size in its dtype;
    inference = the model's size + 20 %; it has no notion of adapters (load size)."""
    size = _weights_gib(row, _storage_bytes(row))
    return {"full": 4 * size, "inference": 1.2 * size}.get(row.setup.method, size)


def seed_table(row: Row, _: list[Row]) -> float | None:
    """The seed article's sizing step 1: 20 B/param for training, 4-6 (5) for LoRA, 2 to infer."""
    per = {"full": 20.0, "lora": 5.0, "inference": 2.0}.get(row.setup.method)
    return None if per is None else _weights_gib(row, per)


def llama_factory_table(row: Row, _: list[Row]) -> float | None:
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


def eleutherai_rule(row: Row, _: list[Row]) -> float:
    """Transformer Math 101: 16 B/param for mixed AdamW (weights, grads, 12 B of optimizer),
    weights + 16 B per trainable parameter for adapters, 1.2 x weights for inference."""
    s = row.setup
    weights = _weights_gib(row, _storage_bytes(row))
    if s.method == "full":
        return _weights_gib(row, 16.0)
    if s.method in ("lora", "qlora"):
        trainable = row.spec.lora_params(s.lora_rank, s.lora_targets)
        return weights + trainable * 16 / GIB
    return 1.2 * weights


PREDICTORS: dict[str, Callable[[Row, list[Row]], float | None]] = {
    "Headroom analytical": analytical,
    "Headroom calibrated (LOO)": calibrated,
    "accelerate 4x weights": accelerate_rule,
    "seed article B/param": seed_table,
    "LLaMA-Factory table": llama_factory_table,
    "EleutherAI 16 B/param": eleutherai_rule,
}


def errors(rows: list[Row]) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {name: [] for name in PREDICTORS}
    for row in rows:
        for name, predict in PREDICTORS.items():
            value = predict(row, rows)
            if value is not None:
                out[name].append((row.setup.method, abs(value / row.peak_gib - 1)))
    return out


def report(rows: list[Row]) -> None:
    table = errors(rows)
    counts = {m: sum(r.setup.method == m for r in rows) for m in METHODS}
    header = ["predictor", "all"] + [f"{m} ({counts[m]})" for m in METHODS]
    print(f"Median absolute % error against {len(rows)} published peaks "
          f"(- : the rule does not cover the method)\n")
    print(f"{header[0]:28}" + "".join(f" {h:>14}" for h in header[1:]))
    for name, pairs in table.items():
        cells = [_median([e for _, e in pairs])]
        cells += [_median([e for m, e in pairs if m == method]) for method in METHODS]
        print(f"{name:28}" + "".join(f" {c:>14}" for c in cells))


def _median(values: list[float]) -> str:
    return f"{100 * statistics.median(values):.1f} %" if values else "-"


def per_row(rows: list[Row]) -> None:
    print(f"\n{'row':>3}  {'model':24} {'method':9} {'counter':9} {'measured':>9} "
          f"{'analytic':>9} {'calib.':>9}")
    for row in rows:
        a, c = analytical(row, rows), calibrated(row, rows)
        print(f"{row.index:>3}  {row.spec.name[:24]:24} {row.setup.method:9} {row.counter:9} "
              f"{row.peak_gib:9.2f} {a:9.2f} {c:9.2f}")


def timings() -> None:
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
    args = parser.parse_args()
    rows = load_rows()
    report(rows)
    if args.rows:
        per_row(rows)
    timings()


if __name__ == "__main__":
    main()
