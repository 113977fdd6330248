"""The simulated step: fake tensors against a real CPU step, the depth extrapolation, the CLI."""

from __future__ import annotations

import json

import pytest

from core.memory import GIB, Layout, Setup
from core.models import preset, spec_from_config
from tracker.cli import main
from tracker.simulate import SimulationError, simulate
from tracker.simulate.config import model_config, stacks
from tracker.simulate.step import measure

LLAMA = {"model_type": "llama", "hidden_size": 128, "intermediate_size": 344,
         "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
         "vocab_size": 1024, "tie_word_embeddings": False}
T5 = {"model_type": "t5", "d_model": 128, "d_ff": 256, "d_kv": 16, "num_heads": 8,
      "num_layers": 4, "num_decoder_layers": 3, "vocab_size": 1024, "feed_forward_proj": "relu",
      "dropout_rate": 0.1}
DEEPSEEK = {"model_type": "deepseek_v2", "hidden_size": 128, "intermediate_size": 256,
            "num_hidden_layers": 5, "num_attention_heads": 4, "num_key_value_heads": 4,
            "vocab_size": 1024, "q_lora_rank": None, "kv_lora_rank": 32, "qk_rope_head_dim": 16,
            "qk_nope_head_dim": 16, "v_head_dim": 16, "moe_intermediate_size": 64,
            "n_routed_experts": 8, "n_shared_experts": 2, "num_experts_per_tok": 2,
            "first_k_dense_replace": 1, "tie_word_embeddings": False}
GEMMA2 = {"model_type": "gemma2", "hidden_size": 128, "intermediate_size": 256,
          "num_hidden_layers": 5, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 32, "vocab_size": 1024, "sliding_window": 32}
GPT2 = {"model_type": "gpt2", "n_embd": 128, "n_layer": 4, "n_head": 4, "vocab_size": 1024,
        "n_positions": 256, "activation_function": "gelu_new", "attn_pdrop": 0.1,
        "resid_pdrop": 0.1, "embd_pdrop": 0.1}


def _spec(config: dict, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return spec_from_config(config, "tiny", None, str(path))


def _peak(spec, setup: Setup, fake: bool = True) -> float:
    """The whole model stepped at its full depth: the largest segment peak."""
    config = model_config(spec)
    found = stacks(config)
    measured = measure(config, setup, found, {s.name: s.count for s in found}, fake=fake)
    return max(total for total, _ in measured.peaks.values())


@pytest.mark.slow
@pytest.mark.parametrize(("config", "setup"), [
    (LLAMA, Setup(seq_len=64, micro_batch=2)),
    (LLAMA, Setup(method="lora", seq_len=64, attention="eager", grad_accum=2)),
    ({**GPT2, "attn_pdrop": 0.0}, Setup(precision="bf16", seq_len=64)),
    (LLAMA, Setup(method="qlora", precision="nf4", seq_len=64, recompute="full")),
    (LLAMA, Setup(method="lora", seq_len=64, loss="chunked")),
    ({**LLAMA, "tie_word_embeddings": True},
     Setup(method="qlora", precision="nf4", seq_len=64, framework="litgpt", loss="chunked",
           adapter_fp32=False, optimizer="paged-adamw")),
], ids=["llama-full", "llama-lora-eager-accum", "gpt2-bf16", "llama-qlora-recompute",
        "llama-lora-chunked-loss", "llama-qlora-litgpt"])
def test_fake_tensors_count_what_a_real_cpu_step_allocates(config, setup, tmp_path):
    """The same step really run on CPU tensors allocates what the fake one counts.

    (The CPU flash kernel has no attention dropout, so GPT-2 runs without it here.)"""
    spec = _spec(config, tmp_path)
    assert _peak(spec, setup) == pytest.approx(_peak(spec, setup, fake=False), rel=0.002)


@pytest.mark.parametrize(("config", "setup"), [
    (LLAMA, Setup(seq_len=64, micro_batch=2)),
    (LLAMA, Setup(method="lora", seq_len=64, recompute="full")),
    (T5, Setup(precision="bf16", seq_len=64)),
    (DEEPSEEK, Setup(method="lora", seq_len=64, lora_targets="attention")),
    (GEMMA2, Setup(seq_len=64, attention="eager")),
    (GPT2, Setup(method="inference", precision="bf16", optimizer="none", seq_len=64)),
], ids=["llama", "llama-lora-recompute", "t5", "deepseek-dense-then-moe", "gemma2-alternating",
        "gpt2-inference"])
def test_two_and_three_blocks_extrapolate_exactly_to_the_full_depth(config, setup, tmp_path):
    spec = _spec(config, tmp_path)
    result = simulate(spec, setup)
    assert result.allocated == pytest.approx(_peak(spec, setup), rel=1e-6)
    assert result.layers_simulated < spec.n_layers + 1


def test_the_breakdown_adds_up_and_says_where_the_peak_is():
    result = simulate(preset("qwen2.5-0.5b"), Setup(method="lora", seq_len=1024))
    assert sum(result.breakdown.values()) == pytest.approx(result.allocated)
    assert result.phase == "backward"  # activations and the loss's gradients, all held
    assert result.breakdown["activations"] > result.breakdown["parameters"] / 2
    assert any("24 blocks" in note for note in result.notes)
    full = simulate(preset("qwen2.5-0.5b"), Setup(seq_len=128))
    assert full.breakdown["optimizer_state"] == pytest.approx(2 * full.breakdown["parameters"],
                                                              rel=0.01)  # AdamW: m and v


def test_layouts_it_cannot_run_say_what_stays_analytical():
    spec = preset("llama-3.1-8b")
    with pytest.raises(SimulationError, match="analytical"):
        simulate(spec, Setup(layout=Layout(n_gpus=8, tp=8)))
    with pytest.raises(SimulationError, match="analytical"):
        simulate(spec, Setup(layout=Layout(n_gpus=4, fsdp="full")))
    with pytest.raises(SimulationError, match="learned positions for 1,024"):
        simulate(preset("gpt2"), Setup(seq_len=2048))


def test_size_simulate_json_and_text(capsys):
    assert main(["size", "--model", "qwen2.5-0.5b", "--method", "lora", "--seq", "512",
                 "--simulate", "--no-history", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    sim = out["simulated"]
    assert set(sim) == {"allocated_gib", "breakdown_gib", "phase", "seconds", "layers_simulated",
                        "notes"}
    analytical = out["allocated_gib"] - out["breakdown_gib"]["overhead"]
    assert sim["allocated_gib"] == pytest.approx(analytical, rel=0.03)
    assert main(["size", "--model", "gpt2", "--seq", "4096", "--simulate", "--no-history"]) == 0
    text = capsys.readouterr().out
    assert "simulated: gpt2 has learned positions for 1,024 tokens" in text
    assert main(["size", "--model", "gpt2", "--seq", "256", "--simulate", "--no-history"]) == 0
    assert "simulated on the model's code (backward" in capsys.readouterr().out


def test_gib_figures_round_trip():
    result = simulate(preset("gpt2"), Setup(precision="bf16", seq_len=128))
    assert result.as_dict()["allocated_gib"] == round(result.allocated / GIB, 3)


NEOX = {"model_type": "gpt_neox", "hidden_size": 128, "intermediate_size": 512,
        "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 1024,
        "hidden_act": "gelu", "tie_word_embeddings": False}
FALCON = {"model_type": "falcon", "hidden_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "vocab_size": 1024, "multi_query": True,
          "new_decoder_architecture": False}
INFER_BF16 = Setup(method="inference", precision="bf16", optimizer="none", seq_len=32)


def _parameter_bytes(spec, setup: Setup, config: dict | None = None) -> float:
    return simulate(spec, setup, config=config).breakdown["parameters"]


def test_the_config_a_spec_was_made_from_is_the_model_built():
    """A spec with no preset or file behind it is built from the config the caller holds (a
    GPT-NeoX block: two MLP matrices, a fused QKV), not as a Llama of the same sizes."""
    spec = spec_from_config(NEOX, "tiny-neox", None, "")
    built = _parameter_bytes(spec, INFER_BF16, NEOX)
    assert built == pytest.approx(2 * spec.total_params, rel=0.02)
    assert _parameter_bytes(spec, INFER_BF16) > 1.1 * built  # the Llama stand-in


def test_bitsandbytes_storage_replaces_linear_subclasses():
    """Falcon's blocks use FalconLinear, an nn.Linear subclass, which bitsandbytes swaps too."""
    spec = spec_from_config(FALCON, "tiny-falcon", None, "")
    nf4 = INFER_BF16.but(precision="nf4")
    assert _parameter_bytes(spec, nf4, FALCON) < 0.6 * _parameter_bytes(spec, INFER_BF16, FALCON)


def test_litgpt_keeps_its_own_output_layer(tmp_path):
    """LitGPT's GPT has an lm_head apart from its embedding; a tied checkpoint's is copied."""
    spec = _spec(GPT2, tmp_path)
    hf = _parameter_bytes(spec, INFER_BF16)
    litgpt = _parameter_bytes(spec, INFER_BF16.but(framework="litgpt"))
    assert litgpt - hf == pytest.approx(GPT2["vocab_size"] * GPT2["n_embd"] * 2, abs=1024)


def test_litgpt_holds_the_last_micro_batchs_4bit_inputs_through_the_next_forward(
        tmp_path, monkeypatch):
    """bitsandbytes' MatMul4Bit keeps its input on its context, alive as long as the graph;
    LitGPT's loop holds the last graph (its ``logits``) until the next forward returns. At
    the end of that forward the simulation holds what the analytical term counts: the same
    fact, counted twice."""
    from dataclasses import replace

    from core.memory import activations, frameworks

    spec = _spec(LLAMA, tmp_path)
    setup = Setup(method="qlora", precision="nf4", seq_len=512, micro_batch=2, grad_accum=2,
                  framework="litgpt", loss="chunked", adapter_fp32=False,
                  optimizer="paged-adamw", lora_dropout=False)
    held = activations.held_quantized_inputs(spec, setup)
    config = model_config(spec)
    found = stacks(config)
    counts = {s.name: s.count for s in found}
    end = ("forward", 1, "after", "layers")
    holding = measure(config, setup, found, counts).peaks[end][0]
    monkeypatch.setitem(frameworks.FRAMEWORKS, "litgpt",
                        replace(frameworks.FRAMEWORKS["litgpt"], keeps_last_graph=False))
    assert activations.held_quantized_inputs(spec, setup) == 0
    dropped = measure(config, setup, found, counts).peaks[end][0]
    assert holding - dropped == pytest.approx(held, rel=0.01)
