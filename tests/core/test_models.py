"""Model presets, HF configs on the meta device, and bare parameter counts."""

from __future__ import annotations

import json

import pytest

from core.gpus import catalog, find
from core.models import ModelError, from_config_file, from_params, meta_param_count, preset, presets

FAMILIES = ("llama", "mistral", "qwen", "gemma", "phi", "deepseek", "gpt2", "opt", "bert", "t5",
            "whisper", "falcon", "starcoder", "olmoe")


def test_every_family_the_issue_lists_has_presets_with_sources():
    table = presets()
    assert {p.family for p in table.values()} >= set(FAMILIES)
    for p in table.values():
        assert p.source.startswith("https://huggingface.co/") and p.n_params > 0
        spec = p.spec()
        # The shape's own count lands close to the exact one: the architecture is right.
        assert spec.analytic_params == pytest.approx(p.n_params, rel=0.02), p.name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "qwen2.5-0.5b", "t5-small", "mixtral-8x7b", "phi-2",
                                  "starcoderbase-1b", "mt5-small", "olmoe-1b-7b"])
def test_preset_counts_are_the_meta_device_counts(name, tmp_path):
    entry = presets()[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(entry.config))
    assert meta_param_count(path) == entry.n_params


@pytest.mark.slow
def test_config_json_counts_exactly_what_the_real_model_has(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=96, intermediate_size=256, num_hidden_layers=3,
                         num_attention_heads=6, num_key_value_heads=2, vocab_size=1000)
    config.save_pretrained(tmp_path)
    real = LlamaForCausalLM(config).num_parameters()
    spec = from_config_file(tmp_path)
    assert spec.total_params == real
    assert (spec.n_layers, spec.hidden, spec.n_kv_heads, spec.head_dim) == (3, 96, 2, 16)


def test_a_config_transformers_cannot_build_keeps_the_shape_count(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "no-such-model", "hidden_size": 64,
                                "num_hidden_layers": 2, "num_attention_heads": 4,
                                "vocab_size": 100}))
    spec = from_config_file(path)
    assert spec.total_params == spec.analytic_params and "from the shape" in spec.note


def test_bad_config_is_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{ not json")
    with pytest.raises(ModelError, match="cannot read"):
        from_config_file(path)


def test_a_bare_parameter_count_names_the_preset_it_borrowed():
    spec = from_params(7e9)
    assert spec.total_params == 7_000_000_000
    assert "nearest preset" in spec.note and spec.family in ("mistral", "llama", "qwen2")


def test_presets_resolve_by_name_repo_and_prefix():
    assert preset("Llama-3.1-8B").name == "llama-3.1-8b"
    assert preset("Qwen/Qwen2.5-7B").name == "qwen2.5-7b"
    with pytest.raises(ModelError, match="ambiguous"):
        preset("qwen2.5")
    with pytest.raises(ModelError, match="unknown model"):
        preset("no-such-model")


def test_moe_and_latent_attention_shapes():
    v3 = preset("deepseek-v3")
    assert v3.is_moe and v3.mla and v3.dense_layers == 3
    assert 30e9 < v3.active_params < 45e9  # ~37B active of 671B
    mixtral = preset("mixtral-8x7b")
    assert 12e9 < mixtral.active_params < 14e9  # ~12.9B active of 46.7B


def test_gpu_catalog_covers_the_issue_and_resolves_log_names():
    names = set(catalog())
    for wanted in ("RTX 3090", "RTX 4090", "RTX 5090", "RTX A6000", "RTX 6000 Ada", "RTX PRO 6000",
                   "L4", "L40S", "A10", "A100 40GB", "A100 80GB", "H100 PCIe", "H100 SXM",
                   "H100 NVL", "H200", "B200", "GB200", "MI250X", "MI300X", "MI325X", "Gaudi 2",
                   "Gaudi 3"):
        assert wanted in names
    assert find("NVIDIA A100-SXM4-80GB").name == "A100 80GB"
    assert find("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert find("h100 pcie").name == "H100 PCIe"
    assert not find("RTX 4090").fast_link and find("H100").fast_link
    assert find("not a gpu") is None
