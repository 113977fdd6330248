"""The memory model against published analytical figures, and its monotonicity."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.memory import Layout, ModelSpec, Setup, SetupError, estimate, model_states
from core.memory.activations import layer_per_token
from core.memory.estimate import kv_cache_bytes
from core.memory.precision import frozen_bytes
from core.models import preset

GB = 1e9
PSI = 7_500_000_000


def _spec(**over) -> ModelSpec:
    base = dict(name="t", family="llama", n_layers=32, hidden=4096, n_heads=32, n_kv_heads=32,
                head_dim=128, vocab=32000, intermediate=11008)
    return ModelSpec(**{**base, **over})


def _per_param(setup: Setup) -> dict[str, float]:
    spec = _spec(n_params=1_000_000_000)
    return {k: v / 1e9 for k, v in model_states(spec, setup).items()}


def test_transformer_math_101_bytes_per_parameter():
    # EleutherAI, "Transformer Math 101": weights 4/2 B, AdamW 12 B (fp32 copy + 2 moments),
    # 8-bit Adam 6 B, SGD with momentum 8 B, gradients in the weights' dtype.
    mixed = _per_param(Setup(precision="mixed-bf16", fp32_grads=False))
    assert mixed == {"weights": 2.0, "gradients": 2.0, "optimizer": 12.0}
    assert _per_param(Setup(precision="fp32")) == {"weights": 4.0, "gradients": 4.0,
                                                    "optimizer": 8.0}
    assert _per_param(Setup(optimizer="sgd-momentum", fp32_grads=False))["optimizer"] == 8.0
    # ... plus one fp32 absmax per 256-element block of each 8-bit moment (bitsandbytes).
    assert _per_param(Setup(optimizer="adamw-8bit"))["optimizer"] == pytest.approx(6.0 + 8 / 256)
    # Megatron, DeepSpeed and HF AMP keep fp32 gradients: 18 B/param (memory_anchors 1.1).
    assert sum(_per_param(Setup(precision="mixed-bf16")).values()) == 18.0
    inference = Setup(method="inference", precision="bf16", optimizer="none")
    assert _per_param(inference)["weights"] == 2.0


@pytest.mark.parametrize(("zero", "expected_gb"), [(0, 120.0), (1, 31.40625), (2, 16.640625)])
def test_zero_paper_example_7_5b_on_64_gpus(zero, expected_gb):
    # Rajbhandari et al. 2020, figure 1: (2 + 2 + K)Ψ with K = 12, Ψ = 7.5B, N_d = 64.
    setup = Setup(fp32_grads=False, layout=Layout(n_gpus=64, zero=zero))
    assert sum(model_states(_spec(n_params=PSI), setup).values()) == expected_gb * GB


def test_zero_3_adds_the_gathered_largest_layer():
    spec = _spec(n_params=PSI)
    setup = Setup(fp32_grads=False, layout=Layout(n_gpus=64, zero=3))
    # 16Ψ/N_d (1.875 GB) plus DeepSpeed's largest_layer_memory = 4 x largest layer.
    expected = 16 * PSI / 64 + 4 * spec.largest_layer_params
    assert sum(model_states(spec, setup).values()) == pytest.approx(expected)


def _gpt3_layer(**setup_over) -> tuple[ModelSpec, Setup]:
    spec = ModelSpec("gpt3", "gpt2", 96, 12288, 96, 96, 128, 50257, 4 * 12288, gated_mlp=False,
                     activation="gelu", dropout=True, norm="layer")
    return spec, Setup(framework="megatron", attention="eager", seq_len=2048, **setup_over)


def test_korthikanti_per_layer_activations_on_a_gpt3_layer():
    # Korthikanti et al. 2022, table 2: sbh(34 + 5as/h) bytes, no parallelism.
    spec, setup = _gpt3_layer()
    s, b, h, a = 2048, 1, 12288, 96
    per_token = layer_per_token(spec, setup, moe=False)
    assert per_token.total(s) * s * b == s * b * h * (34 + 5 * a * s / h)
    # Tensor parallel t = 8: sbh(10 + 24/t + 5as/(ht)); with sequence parallelism all / t.
    tp8 = s * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    assert per_token.total(s, tp=8) * s == pytest.approx(tp8)
    assert per_token.total(s, tp=8, sp=True) * s == pytest.approx(s * h * (34 + 5 * a * s / h) / 8)
    # Selective recompute drops the attention-score term: sbh(10 + 24/t).
    spec, selective = _gpt3_layer(recompute="selective")
    kept = layer_per_token(spec, selective, moe=False).total(s, tp=8) * s
    assert kept == pytest.approx(s * h * (10 + 24 / 8))


def test_kv_cache_examples():
    # HF LLM optimisation guide: octocoder at 16k tokens counted as full multi-head
    # attention holds 2 x 16000 x 40 x 6144 = 7.86e9 values; with its single KV head < 400 MB.
    octo = ModelSpec("octocoder", "gpt_bigcode", 40, 6144, 48, 48, 128, 49152, 4 * 6144)
    setup = Setup(method="inference", precision="bf16", optimizer="none", seq_len=16000)
    assert kv_cache_bytes(octo, setup) == 2 * 16000 * 40 * 6144 * 2
    mqa = ModelSpec("octocoder", "gpt_bigcode", 40, 6144, 48, 1, 128, 49152, 4 * 6144)
    assert kv_cache_bytes(mqa, setup) < 400e6
    # Llama-3.1-8B (8 KV heads of 128, bf16): 128 KiB per token, 1 GiB per 8k-token sequence.
    llama = preset("llama-3.1-8b")
    assert kv_cache_bytes(llama, setup.but(seq_len=8192)) == 1024**3


def test_lora_trainable_counts_are_exact():
    # LitGPT resource tables: r = 8 on query and value.
    assert preset("llama-2-7b").lora_params(8, "qv") == 4_194_304
    assert preset("llama-2-13b").lora_params(8, "qv") == 6_553_600
    # GQA: k and v project to 8 x 128 = 1024; PEFT reports 41,943,040 for r = 16 all-linear.
    assert preset("llama-3-8b").lora_params(16, "all-linear") == 41_943_040
    attention = 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024))
    assert preset("llama-3-8b").lora_params(16, "attention") == attention


def test_qlora_double_quantisation_saves_what_the_paper_says():
    spec = preset("llama-2-7b")
    base = Setup(method="qlora", precision="nf4", double_quant=False)
    saved = estimate(spec, base).allocated - estimate(spec, base.but(double_quant=True)).allocated
    # 0.5 bit/param of fp32 block constants become ~0.127: 0.373 bit on every quantised weight.
    assert saved == pytest.approx(spec.linear_params * 0.373 / 8, rel=0.01)


@pytest.mark.parametrize(("setup", "message"), [
    (Setup(method="qlora", precision="fp32"), "QLoRA keeps the base quantised"),
    (Setup(layout=Layout(n_gpus=4, tp=3)), "not a multiple"),
    (Setup(layout=Layout(n_gpus=6, tp=6)), "does not divide the 32 attention heads"),
    (Setup(layout=Layout(n_gpus=0)), "at least one GPU"),
    (Setup(method="full", precision="nf4"), "cannot train nf4"),
    (Setup(method="inference", precision="bf16"), "no optimizer"),
    (Setup(layout=Layout(n_gpus=2, zero=2, fsdp="full")), "not both"),
])
def test_contradictions_are_refused(setup, message):
    with pytest.raises(SetupError, match=message):
        estimate(preset("llama-2-7b"), setup)


SPECS = [preset(n) for n in ("qwen2.5-0.5b", "llama-3.2-1b", "gemma-2-2b", "mistral-7b-v0.1",
                             "mixtral-8x7b", "gpt2", "deepseek-v2-lite")]
setups = st.builds(
    Setup,
    method=st.sampled_from(["full", "lora", "qlora", "inference"]),
    micro_batch=st.integers(1, 8), seq_len=st.integers(16, 8192),
    recompute=st.sampled_from(["none", "selective", "full"]),
    attention=st.sampled_from(["eager", "sdpa", "flash"]),
    framework=st.sampled_from(["hf", "megatron"]),
    grad_accum=st.integers(1, 4),
)


def _valid(setup: Setup) -> Setup:
    precision = {"qlora": "nf4", "inference": "bf16"}.get(setup.method, "mixed-bf16")
    optimizer = "none" if setup.method == "inference" else "adamw"
    return setup.but(precision=precision, optimizer=optimizer)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SPECS), setups, st.integers(1, 8), st.integers(1, 4096))
def test_more_batch_or_sequence_never_needs_less(spec, setup, more_batch, more_seq):
    setup = _valid(setup)
    base = estimate(spec, setup).allocated
    assert estimate(spec, setup.but(micro_batch=setup.micro_batch + more_batch)).allocated >= base
    assert estimate(spec, setup.but(seq_len=setup.seq_len + more_seq)).allocated >= base


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SPECS), setups, st.integers(1, 24))
def test_more_layers_never_needs_less(spec, setup, extra):
    from dataclasses import replace

    setup = _valid(setup)
    deeper = replace(spec, n_layers=spec.n_layers + extra, n_params=None)
    shallow = replace(spec, n_params=None)
    assert estimate(deeper, setup).allocated >= estimate(shallow, setup).allocated


def test_litgpt_trains_a_tied_model_with_its_own_output_layer():
    """LitGPT's GPT keeps ``lm_head`` apart from the embedding, so a tied model (Gemma, Llama
    3.2) holds a second vocab x hidden matrix: frozen beside LoRA, trained in full fine-tuning
    (its gradient and AdamW's two states too). An untied model is built as it is."""
    spec = preset("gemma-2-2b")
    head = spec.vocab * spec.hidden
    lora = Setup(method="lora", precision="bf16", adapter_fp32=False)
    built = estimate(spec, lora.but(framework="litgpt"))
    assert built.breakdown["weights"] - estimate(spec, lora).breakdown["weights"] == (
        pytest.approx(head * 2))
    assert f"own output layer: {head / 1e9:.2f}B parameters more" in " ".join(built.notes)
    full = Setup(method="full", precision="bf16")
    states = model_states(spec, full.but(framework="litgpt"))
    assert states["weights"] - model_states(spec, full)["weights"] == pytest.approx(head * 2)
    assert states["optimizer"] > model_states(spec, full)["optimizer"]
    untied = preset("llama-2-7b")
    assert (estimate(untied, lora.but(framework="litgpt")).breakdown["weights"]
            == estimate(untied, lora).breakdown["weights"])


def test_litgpt_dequantises_its_4bit_head_through_fp16():
    """Lightning's _Linear4bit quantises from fp16 (``.to(dtype=torch.half)``), so each bf16
    matmul of the quantised head makes the fp16 weight and then a bf16 copy of it; with an
    fp16 compute dtype there is one."""
    spec = preset("llama-2-7b")
    setup = Setup(method="qlora", precision="nf4", framework="litgpt", loss="chunked")
    bf16 = estimate(spec, setup)
    fp16 = estimate(spec, setup.but(compute_dtype="fp16"))
    head = spec.vocab * spec.hidden
    assert bf16.breakdown["logits"] - fp16.breakdown["logits"] == pytest.approx(head * 2)
    # the head itself is stored in 4 bits, beside a 16-bit embedding
    hf = estimate(spec, setup.but(framework="hf"))
    assert hf.breakdown["weights"] - bf16.breakdown["weights"] == pytest.approx(
        head * (2 - frozen_bytes("nf4")))


def _torchtune_logits(spec: ModelSpec, **over) -> float:
    setup = Setup(method="lora", precision="bf16", framework="torchtune", loss="chunked",
                  adapter_fp32=False, recompute="full", micro_batch=2, seq_len=2048)
    return estimate(spec, setup.but(**over)).terms.logits  # held at the loss, peak or not


def test_torchtune_chunked_loss_keeps_bf16_chunks_when_compiled():
    """CEWithChunkedOutputLoss (torchtune 30b8519e8): eager, the end of forward holds the bf16
    chunks, each chunk's fp32 log-softmax and the last chunk's fp32 upcast (one of 8);
    compiled, inductor keeps the bf16 chunk itself and writes only its bf16 gradient."""
    spec = preset("llama-3.1-8b")
    logits = 2 * 2048 * spec.vocab
    assert _torchtune_logits(spec) == pytest.approx(logits * (2 + 4 + 4 / 8))
    assert _torchtune_logits(spec, compile=True) == pytest.approx(logits * (2 + 2 / 8))


def test_torchtune_chunked_output_sums_the_head_gradient_beside_the_logits():
    """The output layer runs once per chunk, so full fine-tuning sums its gradient over the
    chunks beside their bf16 logit gradients: the running sum and the newest term, or only the
    newest when the optimizer steps in backward (the running sum is the one gradient held)."""
    spec = preset("llama-3.1-8b")
    full = dict(method="full", optimizer="adamw", compile=True)
    head, logit_grads = spec.vocab * spec.hidden * 2, 2 * 2048 * spec.vocab * 2
    assert _torchtune_logits(spec, **full) == pytest.approx(logit_grads + 2 * head)
    assert _torchtune_logits(spec, **full, optimizer_in_backward=True) == pytest.approx(
        logit_grads + head)
    assert _torchtune_logits(spec, **full, loss="standard") == pytest.approx(
        _torchtune_logits(spec, loss="standard"))


def test_torchtune_preset_trains_adapters_without_dropout():
    """Every LoRA config torchtune ships sets lora_dropout: 0.0; a stated dropout still wins."""
    from core.sizing import planned_setup

    assert planned_setup("lora", "torchtune").lora_dropout is False
    assert planned_setup("qlora", "torchtune").lora_dropout is False
    assert planned_setup("lora", "torchtune", lora_dropout=True).lora_dropout is True
    assert planned_setup("lora", "hf").lora_dropout is True
