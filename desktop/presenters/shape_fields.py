"""The run's shape as an editable form: grouped fields, where each came from, parsing edits.

The user completes what the log did not say (the sizing fit needs it), so each
field shows its source, and text typed into the form is parsed here into the
field's type, with a one-line message when it does not fit.
"""

from __future__ import annotations

import math
import re
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from core.shape import ATTENTION, LOSSES, METHODS, PRECISIONS, RECOMPUTE, RunShape
from desktop.presenters.formatting import MISSING, setting

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Model", ("model", "family", "n_params", "n_trainable_params", "n_layers", "hidden",
               "n_heads", "n_kv_heads", "head_dim", "vocab", "intermediate", "tied_embeddings",
               "n_experts", "n_active_experts")),
    ("Method", ("method", "precision", "optimizer", "quantization", "lora_rank", "lora_alpha",
                "lora_targets")),
    ("Batch and sequence", ("micro_batch", "grad_accum", "global_batch", "seq_len", "recompute",
                            "attention", "loss", "compile", "activation_offload",
                            "optimizer_in_backward")),
    ("Parallelism", ("n_gpus", "n_nodes", "zero_stage", "fsdp", "tp", "pp", "cp",
                     "sequence_parallel", "cpu_offload")),
    ("Hardware", ("gpu_model", "gpu_mem_gib", "framework")),
)
CHOICES: dict[str, tuple[str, ...]] = {
    "method": METHODS, "precision": PRECISIONS, "recompute": RECOMPUTE, "attention": ATTENTION,
    "loss": LOSSES,
}
LABELS: dict[str, str] = {
    "n_params": "parameters", "n_trainable_params": "trainable parameters", "n_layers": "layers",
    "n_heads": "attention heads", "n_kv_heads": "KV heads", "intermediate": "MLP size",
    "n_experts": "experts", "n_active_experts": "active experts", "n_gpus": "GPUs",
    "n_nodes": "nodes", "tp": "tensor parallel", "pp": "pipeline parallel",
    "gpu_mem_gib": "GPU memory (GiB)", "gpu_model": "GPU model", "fsdp": "FSDP",
    "zero_stage": "ZeRO stage", "seq_len": "sequence length", "grad_accum": "gradient accumulation",
    "cp": "context parallel", "activation_offload": "activation offload",
    "optimizer_in_backward": "optimizer in backward", "cpu_offload": "CPU offload",
}
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_TRUE, _FALSE = {"yes", "true", "1", "on", "y"}, {"no", "false", "0", "off", "n"}


@dataclass(frozen=True)
class FieldRow:
    name: str
    label: str
    value: Any
    text: str
    source: str  # "" when the field is unknown
    choices: tuple[str, ...]


def groups(shape: RunShape) -> list[tuple[str, list[FieldRow]]]:
    """The shape's fields in the form's groups; fields no group lists go under "Other"."""
    listed = {name for _, names in GROUPS for name in names}
    other = tuple(n for n in RunShape.field_names() if n not in listed)
    return [(group, [_row(shape, n) for n in names])
            for group, names in (*GROUPS, ("Other", other)) if names]


def _row(shape: RunShape, name: str) -> FieldRow:
    value = getattr(shape, name)
    shown = ", ".join(map(str, value)) if isinstance(value, list) else setting(value)
    source = shape.sources.get(name, "") if value is not None else ""
    return FieldRow(name, label(name), value,
                    "" if value is None else shown,
                    source_label(source), CHOICES.get(name, ()))


def label(name: str) -> str:
    """A shape field's name as the form shows it: "KV heads" for ``n_kv_heads``."""
    return LABELS.get(name, name.replace("_", " "))


def source_label(source: str) -> str:
    from tracker.db.runs import USER_SOURCE  # the module loads the ORM: not at start

    return "you" if source == USER_SOURCE else source


def parse(name: str, typed: str) -> Any:
    """The value for field ``name`` from what the user typed; "" clears the field.

    Raises ValueError with a message fit for a status line.
    """
    typed = typed.strip()
    if not typed or typed == MISSING:
        return None
    kind = field_kinds()[name]
    try:
        if name in CHOICES:
            return _choice(name, typed)
        if kind is bool:
            return _bool(typed)
        if kind is int:
            return _int(typed)
        if kind is float:
            return float(typed.replace(",", ""))
        if kind is list:
            return [part.strip() for part in typed.split(",") if part.strip()]
        return typed
    except ValueError as err:
        raise ValueError(f"{label(name)}: {err}") from None


@cache
def field_kinds() -> dict[str, type]:
    """Each shape field's base type (``int | None`` -> int, ``list[str] | None`` -> list)."""
    hints = typing.get_type_hints(RunShape)
    return {name: _base(hints[name]) for name in RunShape.field_names()}


def _base(hint: Any) -> type:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return typing.get_origin(hint) or hint


def _choice(name: str, typed: str) -> str:
    for choice in CHOICES[name]:
        if choice.lower() == typed.lower():
            return choice
    raise ValueError(f"one of {', '.join(CHOICES[name])}, not {typed!r}")


def _bool(typed: str) -> bool:
    if typed.lower() in _TRUE | _FALSE:
        return typed.lower() in _TRUE
    raise ValueError(f"yes or no, not {typed!r}")


def _int(typed: str) -> int:
    """A whole number; big counts may be written 8B, 1.5e9 or 8,030,261,248."""
    match = re.fullmatch(r"([0-9.eE+-]+)\s*([kmbgt]?)", typed.replace(",", "").replace("_", ""),
                         re.IGNORECASE)
    try:
        value = float(match[1]) * _SUFFIX.get(match[2].lower(), 1.0)
    except (TypeError, ValueError):  # no match at all, or "1.2.3"
        value = math.nan
    if not value.is_integer():
        raise ValueError(f"a whole number, not {typed!r}")
    return int(value)
