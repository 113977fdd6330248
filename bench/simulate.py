"""How long a simulated step takes, cold (a fresh ``headroom size --simulate``) and warm.

The cold figure is what a user waits for: a new process imports torch and
transformers (most of the time on a 2-core machine), builds two or three
shortened models on fake tensors and steps them, and plans as ``headroom
size`` always does. The warm figure is a later simulation in the same
process (the app's case after its first). The analytical estimate is timed beside it. Timings
belong here, never in unit tests. Run:
``.venv/bin/python bench/simulate.py [--model llama-3.1-70b] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.memory import GIB, Setup, estimate  # noqa: E402
from core.models import preset  # noqa: E402

SETUPS = {
    "full, mixed-bf16": Setup(),
    "LoRA, batch 2 x 4096": Setup(method="lora", micro_batch=2, seq_len=4096),
    "QLoRA, recompute": Setup(method="qlora", precision="nf4", recompute="full"),
    "inference": Setup(method="inference", precision="bf16", optimizer="none", seq_len=8192),
}
CLI_FLAGS = {"full, mixed-bf16": [], "LoRA, batch 2 x 4096": ["--method", "lora", "--batch", "2",
                                                             "--seq", "4096"],
             "QLoRA, recompute": ["--method", "qlora", "--recompute", "full"],
             "inference": ["--method", "inference", "--seq", "8192"]}


def cold_seconds(model: str, flags: list[str]) -> float:
    """Wall time of a fresh ``headroom size --simulate --json`` process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "desktop.launcher", "size", "--model", model, "--simulate",
               "--no-history", "--json", *flags]
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-70b")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tracker.simulate import simulate

    spec = preset(args.model)
    print(f"{args.model}, {os.cpu_count()} CPUs; median of {args.repeat}\n")
    print(f"{'setup':24s} {'cold CLI s':>10s} {'warm s':>8s} {'estimate ms':>12s} "
          f"{'simulated GiB':>14s} {'analytical GiB':>15s}")
    for name, setup in SETUPS.items():
        cold = statistics.median(cold_seconds(args.model, CLI_FLAGS[name])
                                 for _ in range(args.repeat))
        warm, result = [], simulate(spec, setup)  # the first run imports the model's code
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = simulate(spec, setup)
            warm.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(100):
            est = estimate(spec, setup)
        per_estimate = (time.perf_counter() - started) / 100 * 1000
        analytical = (est.allocated - est.breakdown["overhead"]) / GIB
        print(f"{name:24s} {cold:10.1f} {statistics.median(warm):8.2f} {per_estimate:12.2f} "
              f"{result.allocated / GIB:14.2f} {analytical:15.2f}")


if __name__ == "__main__":
    main()
