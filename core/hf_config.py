"""Architecture facts from a Hugging Face ``config.json`` dict, without transformers.

Config keys differ by family (``n_layer`` in GPT-2, ``num_hidden_layers`` in
Llama, ``d_model`` in T5/Whisper); this maps the common spellings onto the
shape fields. Exact parameter counts need the model class and live elsewhere.
"""

from __future__ import annotations

from typing import Any

_KEYS: dict[str, tuple[str, ...]] = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model", "dim", "model_dim"),
    "n_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads"),
    "n_kv_heads": ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num"),
    "head_dim": ("head_dim", "d_kv", "kv_channels"),
    "vocab": ("vocab_size", "padded_vocab_size"),
    "intermediate": ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "ffn_hidden_size", "encoder_ffn_dim",
                     "ff_hidden"),
    "n_experts": ("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"),
    "n_active_experts": ("num_experts_per_tok", "moe_topk", "num_selected_experts"),
}


def shape_fields(config: dict[str, Any]) -> dict[str, Any]:
    """Shape fields stated by an HF model config (only those it states)."""
    text = config.get("text_config")
    if isinstance(text, dict) and not any(k in config for k in _KEYS["n_layers"]):
        config = {**config, **text}  # multimodal configs nest the language model
    out: dict[str, Any] = {}
    for field, keys in _KEYS.items():
        for key in keys:
            value = config.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                out[field] = value
                break
    if "tie_word_embeddings" in config:
        out["tied_embeddings"] = bool(config["tie_word_embeddings"])
    if config.get("model_type"):
        out["family"] = str(config["model_type"])
    name = config.get("_name_or_path")
    if isinstance(name, str) and name:
        out["model"] = name
    if out.get("n_heads") and "n_kv_heads" not in out and "n_layers" in out:
        out["n_kv_heads"] = out["n_heads"]
    quant = config.get("quantization_config")
    if isinstance(quant, dict):
        if quant.get("load_in_4bit") or quant.get("bnb_4bit_quant_type"):
            out["quantization"] = str(quant.get("bnb_4bit_quant_type", "nf4"))
        elif quant.get("load_in_8bit"):
            out["quantization"] = "int8"
    return out
