"""Which process this is in a multi-process run, and one cheap gather at each record.

Rank 0 writes the file. So that its lines describe the whole job, each record
gathers four numbers from every rank in one collective: the memory peaks
(max over ranks: the GPU that fills first is the one that limits the run) and
the samples and tokens consumed (summed over ranks).
"""

from __future__ import annotations

import math
import os
import sys

# What each gathered slot means, and how ranks combine: max or sum.
GATHERED = (("mem_peak_gib", max), ("mem_reserved_gib", max), ("samples", sum), ("tokens", sum))


def _dist():
    """torch.distributed when this process has set it up, else None (never imports torch)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the world size (the launcher's variables before init)."""
    dist = _dist()
    if dist is not None:
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def node_count() -> int | None:
    """Nodes in the job, from the launcher's variables (torchrun, SLURM)."""
    world, local = os.environ.get("WORLD_SIZE"), os.environ.get("LOCAL_WORLD_SIZE")
    if world and local and int(local) > 0:
        return max(1, int(world) // int(local))
    nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES")
    return int(nodes) if nodes and nodes.isdigit() else None


def combine(values: dict[str, float | None]) -> dict[str, float | None]:
    """``values`` (keys of GATHERED) combined over ranks; unchanged in a single process.

    A collective: every rank must call it at the same record. None (no GPU)
    travels as NaN and comes back as None.
    """
    dist = _dist()
    if dist is None or dist.get_world_size() == 1:
        return values
    import torch

    device = _collective_device(dist)
    local = torch.tensor(
        [_nan(values.get(k)) for k, _ in GATHERED], dtype=torch.float64, device=device
    )
    parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, local)
    rows = torch.stack(parts).cpu().tolist()
    out = dict(values)
    for i, (key, how) in enumerate(GATHERED):
        column = [row[i] for row in rows if not math.isnan(row[i])]
        out[key] = how(column) if column else None
    return out


def _collective_device(dist):
    import torch

    # NCCL gathers only device tensors; gloo and mixed "cpu:gloo,cuda:nccl" take CPU ones.
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)
