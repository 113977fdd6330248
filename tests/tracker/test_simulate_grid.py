"""The analytical model held within 3 % of the simulated step, on real configs of every family.

What is compared, on one GPU: ``estimate(spec, setup).allocated`` minus its
``overhead`` component (the fixed cuBLAS / attention workspace, which lives
inside the caching allocator on a GPU but which a step on fake tensors never
allocates; single-GPU runs have no DDP buckets) against the simulated peak
of allocated memory, ``simulate(spec, setup).allocated``. The configs are the
shipped presets at full width and depth (the simulation builds two or three
blocks and extrapolates exactly, so a 47B Mixtral costs what GPT-2 does).

The fast grid crosses every family with each method and a spread of
precisions, shapes, attention and recompute choices; the slow grid (marked)
samples the whole cross product evenly (``HEADROOM_GRID_EVERY``). Cases the analytical model is known to miss by more
than 3 % are listed with the reason, as strict xfails: a fix turns them red.
"""

from __future__ import annotations

import itertools
import os

import pytest

from core.memory import Setup, estimate
from core.models import preset
from tracker.simulate import simulate

TOLERANCE = 0.03

FULL = dict(method="full")
BF16 = dict(precision="bf16")
FP32 = dict(precision="fp32")
FP16 = dict(precision="mixed-fp16")
LORA = dict(method="lora")
LORA_BF16 = dict(method="lora", precision="bf16")
LORA_ATTN = dict(method="lora", lora_targets="attention")
QLORA = dict(method="qlora", precision="nf4")
QLORA_ATTN = dict(method="qlora", precision="nf4", lora_targets="attention")
INFER = dict(method="inference", precision="bf16", optimizer="none")
ADAM8 = dict(optimizer="adamw-8bit")

# (preset, setup fields): each family meets each method; shapes, precisions, attention and
# recompute vary across the rows.
FAST = [
    ("llama-3.2-1b", {**FULL, "seq_len": 1024}),
    ("llama-3.2-1b", {**LORA, "micro_batch": 2, "seq_len": 1024, "loss": "chunked"}),
    ("llama-3.2-1b", {**QLORA, "micro_batch": 4, "seq_len": 256, "recompute": "full"}),
    ("llama-2-7b", {**LORA, "micro_batch": 2, "seq_len": 1024, "attention": "eager"}),
    ("mistral-7b-v0.1", {**INFER, "micro_batch": 4, "seq_len": 2048}),
    ("qwen2.5-0.5b", {**BF16, "micro_batch": 2, "seq_len": 512, "recompute": "selective"}),
    ("qwen2.5-0.5b", {**LORA, "seq_len": 2048, "grad_accum": 2}),
    ("qwen3-0.6b", {**QLORA, "micro_batch": 4, "seq_len": 256}),
    ("qwen3-0.6b", {**FP32, "micro_batch": 2, "seq_len": 512}),
    ("gemma-2-2b", {**LORA_ATTN, "seq_len": 512}),
    ("gemma-3-1b", {**BF16, "micro_batch": 2, "seq_len": 1024, "attention": "eager",
                    "recompute": "selective"}),
    ("phi-2", {**LORA_ATTN, "seq_len": 512}),
    ("phi-3-mini", {**QLORA_ATTN, "seq_len": 512}),
    ("gpt2", {**FULL, "micro_batch": 4, "seq_len": 512}),
    ("gpt2", {**QLORA_ATTN, "seq_len": 512}),
    ("starcoderbase-1b", {**LORA_ATTN, "micro_batch": 2, "seq_len": 1024}),
    ("t5-small", {**FP16, "seq_len": 512}),
    ("t5-base", {**LORA, "seq_len": 512}),
    ("mt5-small", {**QLORA_ATTN, "seq_len": 512}),
    ("bert-base", {**LORA_ATTN, "micro_batch": 4, "seq_len": 512}),
    ("bert-base", {**INFER, "micro_batch": 4, "seq_len": 256}),
    ("mixtral-8x7b", {**LORA_ATTN, "seq_len": 512}),
    ("qwen3-30b-a3b", {**LORA, "seq_len": 256}),
    ("olmoe-1b-7b", {**ADAM8, "seq_len": 512}),
    ("deepseek-v2-lite", {**QLORA_ATTN, "seq_len": 512}),
]

# What the analytical model misses by more than 3 %, and why (checked against the simulation);
# a key may end with the micro batch when only that shape misses.
KNOWN = {
    ("t5-small", "qlora", "full"): "T5 under full recompute keeps the encoder output and "
                                   "position biases beside the rebuilt block",
    ("t5-small", "lora", "full"): "T5 under full recompute keeps the encoder output and "
                                  "position biases beside the rebuilt block",
    ("t5-base", "qlora", "full"): "T5 under full recompute keeps the encoder output and "
                                  "position biases beside the rebuilt block",
    ("t5-base", "lora", "full"): "T5 under full recompute keeps the encoder output and "
                                 "position biases beside the rebuilt block",
    ("phi-2", "qlora", "full", 4): "Phi's parallel block behind bitsandbytes under full "
                                   "recompute, at micro batch 4",
    # Adapters under full recompute on MQA, encoder-only and MoE blocks: the simulated step
    # keeps 4-9 % more in backward than the model counts (not yet explained).
    ("starcoderbase-1b", "qlora", "full"): "MQA block with adapters under full recompute",
    ("bert-base", "lora", "full", 4): "encoder block with adapters under full recompute",
    ("bert-base", "qlora", "full"): "encoder block with adapters under full recompute",
    ("olmoe-1b-7b", "lora", "full", 1): "MoE block with adapters under full recompute",
    ("olmoe-1b-7b", "qlora", "full", 1): "MoE block with adapters under full recompute",
    ("starcoderbase-1b", "inference", "none", 4): "MQA prefill at micro batch 4 keeps a "
                                                  "workspace the model does not count",
    ("t5-small", "qlora", "selective"): "T5 behind bitsandbytes under selective recompute: "
                                        "the model over-counts the saved inputs",
}

MODELS = ("llama-3.2-1b", "llama-3-8b", "mistral-7b-v0.1", "qwen2-0.5b", "qwen3-0.6b",
          "gemma-2-2b", "gemma-3-1b", "phi-2", "phi-3-mini", "gpt2", "starcoderbase-1b",
          "t5-small", "mt5-small", "bert-base", "mixtral-8x7b", "qwen3-30b-a3b", "olmoe-1b-7b",
          "deepseek-v2-lite")
METHODS = (FULL, BF16, FP32, FP16, LORA, LORA_BF16, LORA_ATTN, QLORA, QLORA_ATTN, INFER, ADAM8)
SHAPES = (dict(micro_batch=1, seq_len=512), dict(micro_batch=4, seq_len=256))
RECOMPUTE = (dict(), dict(recompute="full"), dict(recompute="selective", attention="eager"))


def _case(model: str, fields: dict):
    setup = Setup(**fields)
    key = (model, setup.method, setup.recompute)
    reason = KNOWN.get(key) or KNOWN.get((*key, setup.micro_batch))
    if reason:
        return pytest.param(model, setup, marks=pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(model, setup)


def _slow_cases(every: int = int(os.environ.get("HEADROOM_GRID_EVERY", "27"))):
    """A deterministic spread over the cross product: every family meets every method,
    shape and recompute choice somewhere (about 50 cases by default, about 150 at
    ``HEADROOM_GRID_EVERY=9``, the whole product of about 1,300 at 1)."""
    combos = [(model, {**method, **shape, **recompute})
              for model, method, shape, recompute in itertools.product(MODELS, METHODS, SHAPES,
                                                                         RECOMPUTE)
              if not (method is INFER and recompute)]
    return [_case(model, fields) for model, fields in combos[::every]]


def _gap(model: str, setup: Setup) -> float:
    spec = preset(model)
    est = estimate(spec, setup)
    analytical = est.allocated - est.breakdown["overhead"]
    simulated = simulate(spec, setup).allocated
    return (analytical - simulated) / simulated


@pytest.mark.parametrize(("model", "setup"), [_case(m, f) for m, f in FAST])
def test_fast_path_within_3_percent_of_the_simulated_step(model, setup):
    assert abs(_gap(model, setup)) <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize(("model", "setup"), _slow_cases())
def test_every_family_method_precision_shape_and_recompute(model, setup):
    assert abs(_gap(model, setup)) <= TOLERANCE
