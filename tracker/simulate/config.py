"""The Hugging Face config a simulation builds, and the layer stacks it shortens.

A :class:`ModelSpec` comes from a preset, a ``config.json`` or a bare count;
the simulation needs the full config the model class reads. It starts from
the preset or file the spec came from, applies the fields the user
overrode, and fills the few non-architecture keys a training step needs
(T5's decoder start token). Pure Python: no torch here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.hf_config import _KEYS
from core.memory import ModelSpec
from core.models import LEARNED_POSITIONS, presets, spec_from_config

# Keys of the spec a user may override (--layers, --hidden ...), as HF spells them.
_OVERRIDABLE = ("hidden", "n_heads", "n_kv_heads", "vocab", "intermediate")
_EXTRA_DEFAULTS = {"t5": {"decoder_start_token_id": 0, "pad_token_id": 0},
                   "mt5": {"decoder_start_token_id": 0, "pad_token_id": 0}}
ENCODER_DECODER = ("t5", "mt5")


@dataclass(frozen=True)
class Stack:
    """A run of identical blocks the simulation shortens and extrapolates.

    ``prefix`` leading blocks differ from the rest (DeepSeek's dense layers)
    and are always built; the blocks after them are the homogeneous part.
    """

    name: str
    key: str  # the config key holding its length
    count: int
    prefix: int = 0


def base_config(spec: ModelSpec) -> dict[str, Any]:
    """The HF config keys the spec was made from: its preset, its file, or its own fields."""
    table = presets()
    if spec.name in table:
        return dict(table[spec.name].config)
    borrowed = [p for p in table.values() if p.source == spec.source]
    if borrowed:  # a bare parameter count borrows the nearest preset's shape
        return dict(borrowed[0].config)
    path = Path(spec.source) if spec.source else None
    if path is not None and path.suffix == ".json" and path.is_file():
        config = json.loads(path.read_text(encoding="utf-8"))
        text = config.get("text_config")
        if isinstance(text, dict) and "num_hidden_layers" not in config:
            return {**text, "model_type": text.get("model_type") or config.get("model_type")}
        return config
    return _llama_like(spec)


def model_config(spec: ModelSpec, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config to build: ``base`` (the HF config the spec was made from, when the caller
    holds it) or :func:`base_config`'s, the user's overrides, and training defaults."""
    config = dict(base) if base is not None else base_config(spec)
    built = spec_from_config(config, spec.name, None, "")
    for field in _OVERRIDABLE:
        wanted = getattr(spec, field)
        if wanted != getattr(built, field):
            config[_key(config, field)] = wanted
    if spec.n_layers != built.n_layers:
        _set_layers(config, spec.n_layers)
    if spec.head_dim != built.head_dim and "head_dim" in config:
        config["head_dim"] = spec.head_dim
    for key, value in _EXTRA_DEFAULTS.get(str(config.get("model_type")), {}).items():
        config.setdefault(key, value)
    return config


def stacks(config: dict[str, Any]) -> list[Stack]:
    """The layer stacks of a config, with how many blocks each has."""
    if config.get("model_type") in ENCODER_DECODER:
        encoder = int(config.get("num_layers") or 0)
        decoder = int(config.get("num_decoder_layers") or encoder)
        return [Stack("encoder", "num_layers", encoder),
                Stack("decoder", "num_decoder_layers", decoder)]
    key = _key(config, "n_layers")
    prefix = int(config.get("first_k_dense_replace") or 0)
    return [Stack("layers", key, int(config[key]), prefix)]


def max_positions(config: dict[str, Any]) -> int | None:
    """The longest sequence a family with learned position embeddings can take."""
    if config.get("model_type") not in LEARNED_POSITIONS:
        return None
    for key in ("n_positions", "max_position_embeddings"):
        if isinstance(config.get(key), int):
            return int(config[key])
    return None


def with_counts(config: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    """A copy of ``config`` whose stacks have the given numbers of blocks."""
    out = dict(config)
    for stack in stacks(config):
        out[stack.key] = counts[stack.name]
    return out


def _key(config: dict[str, Any], field: str) -> str:
    present = [k for k in _KEYS[field] if k in config]
    return present[0] if present else _KEYS[field][0]


def _set_layers(config: dict[str, Any], n_layers: int) -> None:
    if config.get("model_type") in ENCODER_DECODER:  # the spec counts both stacks
        config["num_layers"] = config["num_decoder_layers"] = max(1, n_layers // 2)
    else:
        config[_key(config, "n_layers")] = n_layers


def _llama_like(spec: ModelSpec) -> dict[str, Any]:
    """A Llama config for an architecture given on the command line."""
    return {"model_type": "llama", "hidden_size": spec.hidden, "num_hidden_layers": spec.n_layers,
            "num_attention_heads": spec.n_heads, "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim, "vocab_size": spec.vocab,
            "intermediate_size": spec.intermediate, "tie_word_embeddings": spec.tied_embeddings,
            "hidden_act": "silu"}
