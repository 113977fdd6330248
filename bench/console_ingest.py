"""Console-log reading at scale: a generated Megatron-style log of a few hundred MB.

A 2 GB SLURM log must be read streaming, in bounded memory. This writes a
Megatron-LM-style log (timestamped iteration lines, per-rank memory reports, a
timers block, rank-labelled by srun) into a temporary folder and measures, each
in a fresh interpreter so that the peak RSS is that of the work alone:

- the floor: Python reading the file's lines and doing nothing else;
- Headroom's Megatron reader (``read_runs``): lines/s, MB/s and peak RSS;
- a full ``headroom ingest`` of the file into a fresh SQLite store.

Peak RSS is printed beside the file size: it must stay far below it (the reader
keeps numbers, 8 bytes each, never the text)::

    .venv/bin/python bench/console_ingest.py                 # 1,000,000 lines, about 430 MB
    .venv/bin/python bench/console_ingest.py --lines 200000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ITERATION = (" [2025-03-01 {h:02d}:{m:02d}:{s:02d}.{us:06d}] iteration {step:8d}/ 5000000 | "
             "consumed samples: {samples:12d} | elapsed time per iteration (ms): {ms:.1f} | "
             "throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: {lr:.6E} | "
             "global batch size:   512 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
             "{gnorm:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
MEMORY = ("[Rank {rank}] (after {step} iterations) memory (MB) | allocated: 15012.25 | "
          "max allocated: {peak:.2f} | reserved: 35128.00 | max reserved: 35128.00")
TIMERS = ("(min, max) time across ranks (ms):",
          "    forward-backward ...............................: (1612.79, 1612.87)",
          "    optimizer ......................................: (2.63, 3.11)")


def write_megatron_log(path: Path, lines: int) -> Path:
    """About ``lines`` lines: iteration lines; memory reports and timers every 100 iterations."""
    written = step = 0
    with open(path, "w") as f:
        f.write(" 0: ------------------------ arguments ------------------------\n"
                " 0:   num_layers ...................................... 32\n"
                " 0: -------------------- end of arguments ---------------------\n")
        while written < lines:
            step += 1
            s = step * 2
            f.write("31: " + ITERATION.format(
                h=(s // 3600) % 24, m=(s // 60) % 60, s=s % 60, us=step % 1_000_000, step=step,
                samples=step * 512, ms=1600 + step % 50, tflops=350 + step % 7, lr=3e-4,
                loss=2 + 8 / (1 + step / 1000), gnorm=1 + step % 3 / 10) + "\n")
            written += 1
            if step % 100 == 0:
                for rank in range(4):
                    report = MEMORY.format(rank=rank, step=step, peak=33480 + rank)
                    f.write(f"{rank}: {report}\n")
                f.write("".join(f"31: {t}\n" for t in TIMERS))
                written += 7
    return path


MEASURE = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
kind, path = sys.argv[1], Path(sys.argv[2])
start = time.perf_counter()
if kind == "floor":
    with open(path, "rb") as f:
        n = sum(1 for _ in f)
elif kind == "reader":
    from tracker.readers.text.megatron import read_runs
    runs = read_runs(path)
    n = sum(len(s) for r in runs for s in r.series.values())
else:
    from tracker.ingest import ingest
    from tracker.store import Store
    report = ingest(Store(str(path.with_suffix(".db"))), [path])
    assert report.ok, report.to_dict()
    n = sum(r.points for r in report.results)
seconds = time.perf_counter() - start
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "count": n, "rss_mb": rss_mb}}))
"""


KINDS = (("floor", "Python line iteration (floor)"), ("reader", "Megatron reader"),
         ("ingest", "headroom ingest (read + store)"))


def measure(kind: str, path: Path) -> dict:
    command = [sys.executable, "-c", MEASURE.format(root=str(ROOT)), kind, str(path)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_megatron_log(Path(tmp) / "megatron.log", args.lines)
        size_mb = path.stat().st_size / 1e6
        lines = sum(1 for _ in open(path, "rb"))
        print(f"log: {lines:,} lines, {size_mb:,.0f} MB")
        for kind, label in KINDS:
            result = measure(kind, path)
            rate = lines / result["seconds"]
            print(f"{label:32s} {result['seconds']:7.2f} s  {rate:11,.0f} lines/s  "
                  f"{size_mb / result['seconds']:6.1f} MB/s  peak RSS {result['rss_mb']:6.0f} MB")


if __name__ == "__main__":
    main()
