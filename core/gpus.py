"""The GPU catalog: memory, bandwidth, tensor throughput and interconnect per model.

Loaded once from ``resources/gpus.toml``. Names from logs ("NVIDIA A100-SXM4-80GB")
and from people ("a100", "h100 sxm") resolve through each entry's aliases.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from core.resources import resources_dir

# Interconnects that carry tensor parallelism well (the seed article: TP needs NVLink).
FAST_LINKS = ("nvlink", "xgmi")


@dataclass(frozen=True)
class GPU:
    """One accelerator model."""

    name: str
    vendor: str
    memory_gib: float
    bandwidth_tbs: float
    bf16_tflops: float
    fp8_tflops: float
    link: str
    link_gbs: float
    gpus_per_node: int
    source: str
    aliases: tuple[str, ...] = ()
    approx: bool = False
    host_link_gbs: float = 25.0  # to the host, one direction: what CPU offload moves over
    usd_per_hour: float = 0.0  # indicative rental price per GPU-hour (0: unknown)

    @property
    def fast_link(self) -> bool:
        return self.link in FAST_LINKS

    def peak_tflops(self, precision: str) -> float:
        """Dense tensor TFLOP/s for a training or inference precision."""
        if precision == "fp8" and self.fp8_tflops:
            return self.fp8_tflops
        if precision == "fp32":
            return self.bf16_tflops / 2  # TF32 tensor cores run at half the bf16 rate
        return self.bf16_tflops


@cache
def catalog() -> dict[str, GPU]:
    data = tomllib.loads((resources_dir() / "gpus.toml").read_text(encoding="utf-8"))
    return {
        name: GPU(name=name, aliases=tuple(entry.pop("aliases", ())), **entry)
        for name, entry in data["gpus"].items()
    }


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower().removeprefix("nvidia ").removeprefix("amd "))


def find(name: str) -> GPU | None:
    """The catalog entry for a name as a person or a log writes it, or None."""
    key = _key(name)
    if not key:
        return None
    for gpu in catalog().values():
        if key in {_key(gpu.name), *(_key(a) for a in gpu.aliases)}:
            return gpu
    # Longest alias contained in the text ("NVIDIA H100 80GB HBM3 (rank 0)").
    best: tuple[int, GPU] | None = None
    for gpu in catalog().values():
        for alias in (gpu.name, *gpu.aliases):
            k = _key(alias)
            if len(k) >= 3 and k in key and (best is None or len(k) > best[0]):
                best = (len(k), gpu)
    return best[1] if best else None


def names() -> list[str]:
    return list(catalog())
