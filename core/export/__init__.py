"""A plan as its framework's own config, so a run is launched from what was sized.

Every format reads one :class:`Target` (a model and the plan the planner
chose) and writes only values that plan used; a plan a format cannot express
raises :class:`ExportError` with a one-line reason. Each format is one module
with ``render(target) -> Export`` (and ``read(config)`` where ``headroom check``
reads that format back).
"""

from __future__ import annotations

import importlib

from core.export.target import Export, ExportError, Target

__all__ = ["FORMATS", "Export", "ExportError", "Target", "export", "format_for"]

# Format name -> module under core.export, in the order help texts list them.
FORMATS = {
    "hf": "hf",
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
    "torchtune": "torchtune",
    "axolotl": "axolotl",
    "lightning": "lightning",
    "launch": "launch",
}
# The format a run of each framework is launched with (headroom fix exports in it).
BY_FRAMEWORK = {"hf": "hf", "trl": "hf", "llama-factory": "hf", "unsloth": "hf",
                "deepspeed": "deepspeed", "torchtune": "torchtune", "axolotl": "axolotl",
                "lightning": "lightning", "pytorch-lightning": "lightning"}


def export(target: Target, fmt: str) -> Export:
    """``target`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return importlib.import_module(f"core.export.{FORMATS[fmt]}").render(target)


def format_for(framework: str) -> str:
    """The export a run of ``framework`` would be launched from (launch lines otherwise)."""
    return BY_FRAMEWORK.get(framework, "launch")
