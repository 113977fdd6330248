"""How long a simulated step takes, cold (a fresh ``headroom size --simulate``) and warm.

The cold figure is what a user waits for: a new process imports torch and
transformers (most of the time on a 2-core machine), builds two or three
shortened models on fake tensors and steps them, and plans as ``headroom
size`` always does. Its CPU time is printed beside its wall time, with the
machine's load average: on a shared machine the wall time measures the others.
The warm figure is a later simulation in the same process (the app's case
after its first). The analytical estimate is timed beside it. Timings belong
here, never in unit tests. Run:
``.venv/bin/python bench/simulate.py [--model llama-3.1-70b] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def cold_seconds(model: str, flags: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of a fresh ``headroom size --simulate --json``
    process. The process is single-threaded, so on an idle machine its wall time is about its
    CPU time; on a shared one the CPU time is the figure that does not depend on the others."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "desktop.launcher", "size", "--model", model, "--simulate",
               "--no-history", "--json", *flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-70b")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tracker.simulate import simulate

    spec = preset(args.model)
    print(f"{args.model}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the "
          f"start; median of {args.repeat}\n")
    print(f"{'setup':24s} {'cold CLI s':>10s} {'cold CPU s':>10s} {'warm s':>8s} "
          f"{'estimate ms':>12s} {'simulated GiB':>14s} {'analytical GiB':>15s}")
    for name, setup in SETUPS.items():
        runs = [cold_seconds(args.model, CLI_FLAGS[name]) for _ in range(args.repeat)]
        cold, cpu = (statistics.median(r[i] for r in runs) for i in (0, 1))
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
        print(f"{name:24s} {cold:10.1f} {cpu:10.1f} {statistics.median(warm):8.2f} "
              f"{per_estimate:12.2f} {result.allocated / GIB:14.2f} {analytical:15.2f}")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
