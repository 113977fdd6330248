"""Checkpoint scans at scale: an HF-style output folder with a few hundred checkpoint-N folders.

Writes ``--count`` HF Trainer checkpoints of a small model (real torch files:
weights, AdamW state, scheduler, RNG, trainer state, training arguments) into a
temporary folder and measures:

- Headroom's scan (discover + safe inspection of every state file), the work a
  "Rescan" does off the GUI thread;
- the baseline a careful user would run instead: ``torch.load(...,
  weights_only=True, mmap=True)`` of each checkpoint's optimizer, scheduler and
  RNG files (it still cannot read ``training_args.bin`` safely);
- ``report()`` (best, latest, resume point) from the stored rows, what the
  panel calls on every selection change::

    .venv/bin/python bench/checkpoints.py                # 200 checkpoints
    .venv/bin/python bench/checkpoints.py --count 50 --params 2000000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_run(folder: Path, count: int, params: int) -> None:
    import torch
    from safetensors.torch import save_file

    width = max(8, int((params / 2) ** 0.5))
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Linear(width, 2))
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, width)).sum().backward()
    optimizer.step()
    history = []
    for i in range(1, count + 1):
        step = i * 10
        history += [{"step": step, "loss": 3.0 / i}, {"step": step, "eval_loss": 3.1 / i}]
        ckpt = folder / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                  ckpt / "model.safetensors")
        torch.save(optimizer.state_dict(), ckpt / "optimizer.pt")
        torch.save({"last_epoch": step, "base_lrs": [1e-3]}, ckpt / "scheduler.pt")
        torch.save({"cpu": torch.get_rng_state()}, ckpt / "rng_state.pth")
        args = argparse.Namespace(fp16=False, output_dir=str(folder))
        torch.save(args, ckpt / "training_args.bin")
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step,
                                                             "log_history": history}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": count * 10,
                                                           "log_history": history}))


def timed(label: str, fn, count: int):
    start = time.perf_counter()
    result = fn()
    took = time.perf_counter() - start
    print(f"{label:<46} {took:8.3f} s   {1000 * took / count:7.2f} ms per checkpoint")
    return result


def baseline(folder: Path) -> None:
    import torch

    for ckpt in sorted(folder.glob("checkpoint-*")):
        for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
            torch.load(ckpt / name, weights_only=True, mmap=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--params", type=int, default=200_000)
    args = parser.parse_args()
    from tracker.checkpoints import manager
    from tracker.ingest import ingest
    from tracker.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "out"
        write_run(folder, args.count, args.params)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        print(f"{args.count} checkpoints, {size / 1e6:.0f} MB on disk")
        timed("torch.load(weights_only=True, mmap=True) x3", lambda: baseline(folder), args.count)
        store = Store(str(Path(tmp) / "bench.db"))
        run_id = ingest(store, [folder]).results[0].run_id
        found = timed("Headroom rescan (discover + inspect + store)",
                      lambda: manager.rescan(store, run_id), args.count)
        assert len(found) == args.count and all(c.complete for c in found)
        timed("Headroom report (best, latest, resume)",
              lambda: manager.report(store, run_id), args.count)


if __name__ == "__main__":
    main()
