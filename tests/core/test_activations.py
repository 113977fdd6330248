"""The activation inventory against what autograd really keeps, on real tiny models (CPU).

Saved-tensor hooks see every tensor the forward pass stores for backward; the
difference between a model with L + 2 and L layers is two layers' worth, which
must match :func:`core.memory.activations.layer_per_token`. MemTracker (PyTorch's
own allocation tracker) checks a whole AdamW step, logits and optimizer included.
"""

from __future__ import annotations

import pytest

from core.memory import Setup, estimate
from core.memory.activations import layer_per_token
from core.models import spec_from_config

pytestmark = pytest.mark.slow
SEQ, BATCH = 128, 2


def _llama_config(layers: int, **over) -> dict:
    return {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
            "num_hidden_layers": layers, "num_attention_heads": 8, "num_key_value_heads": 2,
            "vocab_size": 512, "max_position_embeddings": SEQ, "tie_word_embeddings": False,
            "hidden_act": "silu", **over}


def _gpt2_config(layers: int) -> dict:
    return {"model_type": "gpt2", "n_embd": 128, "n_layer": layers, "n_head": 4,
            "vocab_size": 512, "n_positions": SEQ, "activation_function": "gelu_new",
            "attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0}


def _build(config: dict, attention: str, lora: str | None):
    import torch
    import transformers

    cfg = dict(config)
    model_type = cfg.pop("model_type")
    hf = transformers.CONFIG_MAPPING[model_type](**cfg, attn_implementation=attention)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf).to(torch.bfloat16)
    if lora:
        from peft import LoraConfig, get_peft_model

        targets = "all-linear" if lora == "all-linear" else ["q_proj", "v_proj"]
        model = get_peft_model(model, LoraConfig(r=8, target_modules=targets, lora_dropout=0.0))
    return model


def _saved_bytes(model) -> int:
    """Bytes of the distinct non-parameter storages a training forward saves for backward."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    ids = torch.randint(0, 512, (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids)
    return sum(seen.values())


def _measured_per_layer(config_for, attention: str, lora: str | None = None) -> float:
    two = _saved_bytes(_build(config_for(2), attention, lora))
    four = _saved_bytes(_build(config_for(4), attention, lora))
    return (four - two) / 2


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("method", ["full", "lora-qv", "lora-all"])
def test_llama_layer_matches_what_autograd_saves(attention, method):
    lora = {"full": None, "lora-qv": "qv", "lora-all": "all-linear"}[method]
    measured = _measured_per_layer(_llama_config, attention, lora)
    spec = spec_from_config(_llama_config(2), "tiny", None, "test")
    setup = Setup(method="lora" if lora else "full", precision="bf16", attention=attention,
                  lora_rank=8, lora_targets=lora or "all-linear", lora_dropout=False,
                  micro_batch=BATCH, seq_len=SEQ)
    predicted = layer_per_token(spec, setup, moe=False).total(SEQ) * SEQ * BATCH
    assert predicted == pytest.approx(measured, rel=0.03)


def test_gpt2_layer_matches_what_autograd_saves():
    measured = _measured_per_layer(_gpt2_config, "eager")
    spec = spec_from_config(_gpt2_config(2), "tiny-gpt2", None, "test")
    setup = Setup(method="full", precision="bf16", attention="eager", micro_batch=BATCH,
                  seq_len=SEQ)
    predicted = layer_per_token(spec, setup, moe=False).total(SEQ) * SEQ * BATCH
    assert predicted == pytest.approx(measured, rel=0.05)


def test_a_whole_adamw_step_peaks_where_the_model_says():
    """PyTorch's MemTracker follows every allocation of two real training steps."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    config = _llama_config(2, vocab_size=4096, intermediate_size=688)
    model = _build(config, "sdpa", None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    ids = torch.randint(0, 4096, (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    tracker = MemTracker()
    tracker.track_external(model, optimizer)
    for step in range(2):
        with tracker:
            model(input_ids=ids, labels=ids).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if step == 0:
            tracker.reset_mod_stats()
    measured = tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    spec = spec_from_config(config, "tiny", None, "test")
    setup = Setup(method="full", precision="bf16", micro_batch=BATCH, seq_len=SEQ)
    predicted = estimate(spec, setup)
    # The fixed GPU workspace (cuBLAS) has no CPU counterpart.
    assert predicted.allocated - predicted.breakdown["overhead"] == pytest.approx(measured, rel=0.1)
