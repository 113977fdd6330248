"""Model shapes: presets, Hugging Face configs, and a bare parameter count.

Presets (``resources/models/*.toml``) hold the architecture keys of each
model's ``config.json`` and its exact parameter count, so a preset and a
dropped-in config go through the same parser. A config file on disk is also
built on torch's meta device (no weights, no download) for its exact count.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from core.hf_config import shape_fields
from core.memory.spec import ModelSpec
from core.resources import resources_dir

# Families whose MLP is gated (SwiGLU / GeGLU: gate, up and down projections).
GATED = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "olmoe", "gemma",
         "gemma2", "gemma3", "gemma3_text", "phi3", "deepseek_v2", "deepseek_v3", "olmo2",
         "granite", "cohere", "starcoder2_gated")
LAYER_NORM = ("gpt2", "opt", "bert", "roberta", "whisper", "falcon", "bart", "gpt_neox", "phi",
              "gptj", "bloom", "starcoder2", "gpt_bigcode")
LEARNED_POSITIONS = ("gpt2", "opt", "bert", "roberta", "whisper", "bart", "gpt_neo", "gpt_bigcode")
FOUR_NORMS = ("gemma2", "gemma3", "gemma3_text")  # pre- and post-norms around both sublayers
# Families whose q, k, v projections (and gate, up) are single linears in transformers.
FUSED_QKV = ("gpt2", "gpt_bigcode", "phi3", "falcon", "gpt_neox", "bloom")
FUSED_GATE_UP = ("phi3",)
QK_NORM = ("qwen3", "qwen3_moe", "olmoe", "olmo2", "gemma3", "gemma3_text")
ENCODER_ONLY = ("bert", "roberta")
_COUNT_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "hidden_dropout_prob",
                 "attention_probs_dropout_prob", "dropout", "dropout_rate", "hidden_dropout")


class ModelError(ValueError):
    """A model the user named or pointed to cannot be used; one line for the user."""


@dataclass(frozen=True)
class Preset:
    """One shipped model shape: its config keys, exact size and where they come from."""

    name: str
    family: str  # the file it lives in: llama, qwen, gemma...
    config: dict[str, Any]
    n_params: int
    source: str

    def spec(self) -> ModelSpec:
        return spec_from_config(self.config, self.name, self.n_params, self.source)


@cache
def presets() -> dict[str, Preset]:
    """Every shipped preset by name, in file order."""
    out: dict[str, Preset] = {}
    for path in sorted((resources_dir() / "models").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for name, entry in data.get("models", {}).items():
            out[name] = Preset(name, path.stem, entry["config"], int(entry["n_params"]),
                               entry["source"])
    return out


def preset(name: str) -> ModelSpec:
    """A preset by name (case-insensitive), HF repo id, or unambiguous prefix."""
    key = name.strip().lower()
    table = presets()
    if key in table:
        return table[key].spec()
    by_repo = [p for p in table.values() if f"/{key}/" in p.source.lower()]
    matches = by_repo or [p for p in table.values() if p.name.startswith(key)]
    if len(matches) == 1:
        return matches[0].spec()
    if matches:
        names = ", ".join(p.name for p in matches[:8])
        raise ModelError(f"model {name!r} is ambiguous: {names}")
    raise ModelError(f"unknown model {name!r}; `headroom size --list-models` shows the presets")


def quantity(text: str) -> float | None:
    """A count as people write it: 7e9, 7B, 350M, 1.5 t, 20k (None when it is not one)."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([kmbgt]?)\s*", text.lower())
    try:
        return float(match[1]) * _COUNT_SUFFIX.get(match[2], 1.0)
    except (TypeError, ValueError):  # no match, or "1.2.3"
        return None


def parse_count(text: str) -> float:
    """A parameter count as people write it: 7e9, 7B, 350M, 1.5 t."""
    value = quantity(text)
    if value is None:
        raise ModelError(f"not a parameter count: {text!r} (try 7e9 or 7B)")
    if value < 1e3:
        raise ModelError(f"{text!r} is too few parameters for a model")
    return value


def from_params(n_params: float) -> ModelSpec:
    """A shape for a bare parameter count: the nearest decoder preset, scaled to ``n_params``."""
    if not n_params or n_params <= 0:
        raise ModelError("the parameter count must be positive")
    def distance(p: Preset) -> float:
        return abs(math.log(p.n_params / n_params))

    decoders = [p for p in presets().values()
                if p.config.get("model_type") not in ENCODER_ONLY + ("t5", "mt5", "whisper")]
    # Prefer today's dense gated decoders (Llama, Qwen, Mistral, Gemma, Phi) when one is close.
    modern = [p for p in decoders if p.config.get("model_type") in GATED
              and not _moe(p.config, shape_fields(p.config))]
    near = min(modern, key=distance)
    if distance(near) > math.log(1.5):
        near = min(decoders, key=distance)
    spec = near.spec()
    note = (f"shape of {near.name} ({near.n_params / 1e9:.2f}B), the nearest preset to "
            f"{n_params / 1e9:.2f}B parameters")
    return replace(spec, name=f"{n_params / 1e9:.3g}B-param model", n_params=int(n_params),
                   note=note, source=near.source)


def from_config_file(path: Path, exact: bool = True) -> ModelSpec:
    """A shape from an HF ``config.json`` (or the folder holding one).

    With ``exact``, the parameter count comes from building the model on
    torch's meta device; if transformers does not know the architecture the
    analytical count is kept and the note says so.
    """
    file = path / "config.json" if path.is_dir() else path
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot read {file}: {err}") from None
    if not isinstance(config, dict):
        raise ModelError(f"{file} is not a model config (expected a JSON object)")
    spec = spec_from_config(config, config.get("_name_or_path") or file.parent.name, None,
                            str(file))
    if not exact:
        return spec
    try:
        count = meta_param_count(file)
    except Exception as err:  # transformers cannot build it: keep the analytical count
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return replace(spec, note=f"parameter count from the shape ({first[:120]})")
    return spec.with_params(count)


def meta_param_count(config_file: Path) -> int:
    """Exact parameter count of the model a config describes, built on the meta device."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(str(config_file), trust_remote_code=False)
    model_type = getattr(config, "model_type", "")
    autos = {"bert": "AutoModelForMaskedLM", "roberta": "AutoModelForMaskedLM",
             "whisper": "AutoModelForSpeechSeq2Seq", "t5": "AutoModelForSeq2SeqLM",
             "mt5": "AutoModelForSeq2SeqLM"}
    names = [autos.get(model_type, "AutoModelForCausalLM"), "AutoModel"]
    last: Exception | None = None
    for name in names:
        try:
            with torch.device("meta"):
                model = getattr(transformers, name).from_config(config)
        except (ValueError, KeyError) as err:
            last = err
            continue
        return sum(p.numel() for p in model.parameters())
    raise ModelError(f"transformers cannot build model type {model_type!r}: {last}")


def spec_from_config(config: dict[str, Any], name: str, n_params: int | None,
                     source: str) -> ModelSpec:
    """A :class:`ModelSpec` from HF config keys (pure; no transformers needed)."""
    text = config.get("text_config")
    if isinstance(text, dict) and "model_type" not in text:
        text = {**text, "model_type": config.get("model_type")}
    cfg = text if isinstance(text, dict) and "num_hidden_layers" not in config else config
    mtype = str(cfg.get("model_type") or "")
    fields = shape_fields(cfg)
    hidden, heads = fields.get("hidden"), fields.get("n_heads")
    if not hidden or not heads or "n_layers" not in fields or not fields.get("vocab"):
        raise ModelError(f"{name}: the config lacks layers, hidden size, heads or vocabulary")
    layers, decoder = _layers(cfg, fields["n_layers"])
    kv = _kv_heads(cfg, fields.get("n_kv_heads") or heads, heads)
    rope, nope = int(cfg.get("qk_rope_head_dim") or 0), int(cfg.get("qk_nope_head_dim") or 0)
    head_dim = (rope + nope) or fields.get("head_dim") or hidden // heads
    return ModelSpec(
        name=name, family=mtype or "unknown", n_layers=layers, hidden=hidden, n_heads=heads,
        n_kv_heads=kv, head_dim=head_dim, vocab=fields["vocab"],
        intermediate=_intermediate(cfg, fields, hidden),
        # transformers ties mT5's output layer to the shared embedding whatever the config says
        tied_embeddings=bool(cfg.get("tie_word_embeddings", True)) or mtype == "mt5",
        gated_mlp=mtype in GATED or str(cfg.get("feed_forward_proj", "")).startswith("gated"),
        fused_qkv=mtype in FUSED_QKV, fused_gate_up=mtype in FUSED_GATE_UP,
        qk_norm=mtype in QK_NORM,
        activation=_activation(cfg), dropout=_dropout(cfg),
        norm="layer" if mtype in LAYER_NORM else "rms",
        norms_per_layer=4 if mtype in FOUR_NORMS else (1 if _single_norm(cfg, mtype) else 2),
        **_moe(cfg, fields),
        q_lora_rank=int(cfg.get("q_lora_rank") or 0),
        kv_lora_rank=int(cfg.get("kv_lora_rank") or 0),
        rope_head_dim=rope if cfg.get("kv_lora_rank") else 0,
        v_head_dim=int(cfg.get("v_head_dim") or 0) if cfg.get("kv_lora_rank") else 0,
        decoder_layers=decoder, positions=_positions(cfg, mtype), n_params=n_params, source=source,
    )


def _layers(cfg: dict, stated: int) -> tuple[int, int]:
    """Total transformer blocks and how many of them are decoder blocks with cross-attention."""
    if "num_decoder_layers" in cfg or cfg.get("model_type") == "t5":
        decoder = int(cfg.get("num_decoder_layers") or cfg.get("num_layers") or stated)
        return int(cfg.get("num_layers") or stated) + decoder, decoder
    if "encoder_layers" in cfg and "decoder_layers" in cfg:
        decoder = int(cfg["decoder_layers"])
        return int(cfg["encoder_layers"]) + decoder, decoder
    return stated, 0


def _kv_heads(cfg: dict, stated: int, heads: int) -> int:
    """Multi-query attention (Falcon-7B, StarCoder) keeps one KV head."""
    if cfg.get("model_type") == "falcon" and not cfg.get("new_decoder_architecture"):
        return 1 if cfg.get("multi_query", True) else heads
    return 1 if cfg.get("multi_query") is True else int(stated)


def _intermediate(cfg: dict, fields: dict, hidden: int) -> int:
    stated = fields.get("intermediate") or cfg.get("ffn_hidden_size")
    return int(stated or 4 * hidden)


def _activation(cfg: dict) -> str:
    name = str(cfg.get("hidden_act") or cfg.get("hidden_activation")
               or cfg.get("activation_function") or cfg.get("feed_forward_proj") or "silu")
    if name in ("gelu_new", "gated-gelu"):  # T5's gated-gelu runs gelu_new
        return "gelu_new"  # a composite of five ops in transformers: keeps four tensors
    for kind in ("silu", "relu"):
        if kind in name:
            return kind
    return "gelu" if "gelu" in name else "silu"


def _dropout(cfg: dict) -> bool:
    return any(isinstance(cfg.get(k), (int, float)) and cfg.get(k) > 0 for k in _DROPOUT_KEYS)


def _single_norm(cfg: dict, mtype: str) -> bool:
    """Parallel attention and MLP behind one norm (Falcon-7B, Phi-1/1.5/2)."""
    if mtype == "phi":
        return True
    return mtype == "falcon" and not cfg.get("new_decoder_architecture") and cfg.get(
        "parallel_attn", True)


def _moe(cfg: dict, fields: dict) -> dict[str, int]:
    experts = int(fields.get("n_experts") or 0)
    if experts <= 1:
        return {}
    width = cfg.get("moe_intermediate_size") or fields.get("intermediate")
    dense = int(cfg.get("first_k_dense_replace") or 0) + len(cfg.get("mlp_only_layers") or [])
    return {"n_experts": experts, "n_active_experts": int(fields.get("n_active_experts") or 2),
            "n_shared_experts": int(cfg.get("n_shared_experts") or 0),
            "moe_intermediate": int(width), "dense_layers": dense}


def _positions(cfg: dict, mtype: str) -> int:
    if mtype not in LEARNED_POSITIONS:
        return 0
    if mtype == "whisper":
        return int(cfg.get("max_source_positions", 0)) + int(cfg.get("max_target_positions", 0))
    n = int(cfg.get("n_positions") or cfg.get("max_position_embeddings") or 0)
    return n + int(cfg.get("type_vocab_size") or 0) + (2 if mtype == "opt" else 0)
