"""GPU model and memory from an ``nvidia-smi`` table printed into a log.

Training scripts often print ``nvidia-smi`` at start-up (modded-nanogpt
records do). The table names the GPU model and its memory, which the run's
shape needs and the log rarely says elsewhere.
"""

from __future__ import annotations

import re

from tracker.readers.text._engine import Context, Rule

SOURCE = "nvidia-smi table in the log"
# "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |      0 |"
_NAME = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>\S.*?)\s+(?:On|Off)\s+\|")
# "| N/A   37C    P0     119W /  700W |    5858MiB /  81559MiB |      0%      Default |"
_MEMORY = re.compile(r"\|\s+(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s+\|")


def _name(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("gpu_model", match["name"], SOURCE, overwrite=False)


def _memory(match: re.Match[str], ctx: Context) -> None:
    ctx.run.shape.set("gpu_mem_gib", round(int(match["total"]) / 1024, 2), SOURCE, overwrite=False)


RULES = (
    Rule("MiB /", _MEMORY, _memory, any_rank=True),
    Rule("|", _NAME, _name, any_rank=True),
)
