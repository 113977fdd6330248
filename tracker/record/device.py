"""Device memory as torch's caching allocator counts it, read without a device sync.

``max_memory_allocated`` / ``max_memory_reserved`` are host-side counters, so a
query costs microseconds and never waits for the GPU. Nothing here imports
torch: a process that has not imported it (or never touched CUDA) has no
device memory to report, and the memory fields are then absent, not zero.
"""

from __future__ import annotations

import sys
from typing import Any

from core.metrics import GIB


def cuda_ready() -> bool:
    """True when this process uses CUDA already (never initialises it)."""
    torch = sys.modules.get("torch")
    # is_initialized() first: a flag, where is_available() asks the driver.
    return torch is not None and torch.cuda.is_initialized() and torch.cuda.is_available()


def devices_of(model: Any | None) -> list[int]:
    """The CUDA devices holding ``model``'s parameters (several under ``device_map="auto"``).

    Without a model, or with one on the CPU, the process's current device.
    """
    if not cuda_ready():
        return []
    import torch

    found: set[int] = set()
    if model is not None:
        found = {p.device.index for p in model.parameters() if p.device.type == "cuda"}
    return sorted(found) or [torch.cuda.current_device()]


def peaks(devices: list[int], reset: bool = True) -> tuple[float, float] | None:
    """(max allocated, max reserved) in GiB since the last reset, the max over ``devices``.

    Resets the peak counters afterwards when ``reset``, so the next call sees
    only its own interval.
    """
    if not devices:
        return None
    import torch

    allocated = max(torch.cuda.max_memory_allocated(d) for d in devices)
    reserved = max(torch.cuda.max_memory_reserved(d) for d in devices)
    if reset:
        for d in devices:
            torch.cuda.reset_peak_memory_stats(d)
    return allocated / GIB, reserved / GIB


def gpu_facts(devices: list[int]) -> dict[str, Any]:
    """Shape fields for the GPU model and memory (the first device's)."""
    if not devices:
        return {}
    import torch

    props = torch.cuda.get_device_properties(devices[0])
    return {"gpu_model": props.name, "gpu_mem_gib": round(props.total_memory / GIB, 2)}
