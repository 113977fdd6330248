"""The model of a simulation: its own transformers code, on fake tensors, set up as the run says.

The model is built on the meta device (no weights, no initialisation), given
the run's dtypes, quantised storage, LoRA adapters (PEFT itself) and
recompute, then moved onto fake CPU tensors: they carry shapes and dtypes and
allocate nothing, so a 70B layer costs what a tiny one does.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from core.memory import Setup
from core.memory.frameworks import framework as framework_preset
from tracker.simulate.config import ENCODER_DECODER, Stack

ENCODER_ONLY = ("bert", "roberta")
LORA_DROPOUT = 0.05  # PEFT recipes' usual value when dropout is on
# Module names PEFT adapts for "qv" and "attention", across the families' spellings.
_QV = r"(q_proj|v_proj|q_b_proj|kv_b_proj|qkv_proj|c_attn|query_key_value|query|value|" \
      r"SelfAttention\.[qv]|EncDecAttention\.[qv])"
_ATTENTION = r"(q_proj|k_proj|v_proj|o_proj|qkv_proj|q_a_proj|q_b_proj|kv_a_proj_with_mqa|" \
             r"kv_b_proj|self_attn\.dense|attention\.dense|self_attention\.dense|c_attn|" \
             r"attn\.c_proj|query_key_value|query|key|value|" \
             r"attention\.output\.dense|(SelfAttention|EncDecAttention)\.[qkvo])"
_TARGETS = {"qv": _QV, "attention": _ATTENTION}


@dataclass
class Built:
    """A model ready to step, and what the tracker needs to know about it."""

    model: Any  # the module the step calls (PEFT's wrapper for LoRA)
    layers: dict[Any, tuple[str, int]]  # block module -> (stack name, index)
    autocast: Any  # torch dtype, or None for no autocast
    head: Any = None  # the output layer, when a fused loss replaces it
    notes: list[str] = field(default_factory=list)
    held: list = field(default_factory=list)  # 4-bit matmul inputs the live graphs keep

    def trainable(self) -> list:
        return [p for p in self.model.parameters() if p.requires_grad]


def build(config: dict[str, Any], setup: Setup, stacks: list[Stack], fake_mode) -> Built:
    """The model of ``config`` for ``setup``, on fake CPU tensors."""
    import torch

    notes: list[str] = []
    preset = framework_preset(setup.framework)
    if preset.unties_embeddings:
        config = {**config, "tie_word_embeddings": False}
    with torch.device("meta"):
        model = _from_config(config, setup, notes)
    if not preset.hf_modules:
        _fused_activations(model)
    _cast(model, _base_dtype(setup))
    if setup.method == "qlora" or (setup.method == "inference" and setup.precision in ("nf4", "int8")):
        _quantize(model, setup)
    if setup.method in ("lora", "qlora"):
        model = _lora(model, setup, notes)
        if not setup.adapter_fp32:  # torchtune, LitGPT: adapters in the compute dtype
            _cast_adapters(model, _base_dtype(setup))
    if setup.training:
        model.train()
        if setup.recompute == "full":
            _base(model).gradient_checkpointing_enable()
    else:
        model.eval()
        model.requires_grad_(False)
    with fake_mode:
        model = model.to_empty(device="cpu")
        _base(model).tie_weights()  # to_empty gives each use of a shared weight its own copy
    head = None
    if setup.loss in ("fused", "chunked") and setup.training:
        head = _detach_head(_base(model))
    return Built(model, _layers(model, stacks), _autocast(setup), head, notes,
                 _held_inputs(model, setup))


def _from_config(config: dict[str, Any], setup: Setup, notes: list[str]):
    import transformers

    kind = str(config["model_type"])
    keys = {k: v for k, v in config.items() if k != "model_type"}
    auto = (transformers.AutoModelForSeq2SeqLM if kind in ENCODER_DECODER else
            transformers.AutoModelForMaskedLM if kind in ENCODER_ONLY else
            transformers.AutoModelForCausalLM)
    wanted = "eager" if setup.attention == "eager" else "sdpa"
    if setup.attention == "flash":
        notes.append("flash attention simulated as SDPA's flash kernel (same saved tensors)")
    hf = transformers.CONFIG_MAPPING[kind](**keys)
    try:
        return auto.from_config(hf, attn_implementation=wanted)
    except ValueError:  # the family has no SDPA path in transformers (Gemma 2)
        notes.append(f"{kind} has no SDPA attention in transformers; simulated with eager attention")
        return auto.from_config(hf, attn_implementation="eager")


def _fused_activations(model) -> None:
    """transformers writes the tanh GELU (GPT-2, Phi, GPT-J) as five tensor ops, each keeping
    its input; frameworks with their own model code (LitGPT's ``F.gelu(approximate="tanh")``,
    Megatron, torchtitan) call the fused kernel, which keeps the input alone."""
    import torch
    from transformers.activations import NewGELUActivation

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, NewGELUActivation):
                setattr(parent, name, torch.nn.GELU(approximate="tanh"))


def _base_dtype(setup: Setup):
    """Storage dtype of the model's own parameters."""
    import torch

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if setup.method == "full":
        return torch.float32 if setup.precision.startswith("mixed-") else dtypes[setup.precision]
    if setup.method == "qlora" or setup.precision in ("nf4", "int8"):
        return dtypes[setup.compute_dtype]
    return dtypes[setup.base_storage]


def _cast(model, dtype) -> None:
    """Cast as ``from_pretrained(dtype=...)`` does, keeping the modules a family pins in fp32."""
    import torch

    model.to(dtype)
    pinned = set(getattr(model, "_keep_in_fp32_modules_strict", None) or ())
    if dtype == torch.float16:  # transformers pins the loose list only against fp16 overflow
        pinned |= set(getattr(model, "_keep_in_fp32_modules", None) or ())
    for name, module in model.named_modules():
        if pinned & set(name.split(".")):
            module.to(torch.float32)


def _kept(model) -> set[str]:
    """Module names transformers never quantises (its fp32 lists)."""
    return set(getattr(model, "_keep_in_fp32_modules", None) or ()) | set(
        getattr(model, "_keep_in_fp32_modules_strict", None) or ())


def _autocast(setup: Setup):
    """The autocast dtype: mixed precision, and QLoRA's fp32 adapters over a 16-bit base."""
    import torch

    if setup.method == "qlora":
        if not framework_preset(setup.framework).quantized_autocast:
            return None
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(setup.compute_dtype)
    if setup.training and setup.precision.startswith("mixed-"):
        return torch.bfloat16 if setup.precision == "mixed-bf16" else torch.float16
    return None


def _quantize(model, setup: Setup) -> None:
    """Swap every block linear for bitsandbytes' storage (embeddings and head stay 16-bit)."""
    import torch

    from tracker.simulate.quantized import quantized_linear_class

    cls = quantized_linear_class()
    preset = framework_preset(setup.framework)
    bits = 8 if setup.precision == "int8" else 4
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        setup.compute_dtype]
    from transformers.pytorch_utils import Conv1D

    head = None if preset.quantizes_head else model.get_output_embeddings()
    kept, saves = _kept(model), preset.nf4_saves_input or bits == 8
    state = torch.float16 if bits == 4 and preset.nf4_fp16_state else dtype
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            # subclasses too (Falcon's FalconLinear): bitsandbytes swaps every nn.Linear
            if isinstance(child, (torch.nn.Linear, Conv1D)) and not isinstance(child, cls) \
                    and child is not head and name not in kept:
                setattr(parent, name, cls(child, bits, setup.double_quant, dtype, saves, state))


def _held_inputs(model, setup: Setup) -> list:
    """One list the quantised matmuls keep their inputs in while their graph lives, as
    bitsandbytes keeps them on the graph's contexts. Under transformers 4's reentrant
    checkpointing, which those bitsandbytes releases ran with, a context lives in one layer's
    local graph, as a saved tensor does: with recompute they are saved for backward instead."""
    held: list = []
    if setup.training and setup.recompute != "full":
        for module in model.modules():
            if hasattr(module, "held"):
                module.held = held
    return held


def _lora(model, setup: Setup, notes: list[str]):
    import copy

    from peft import LoraConfig, get_peft_model

    targets = "all-linear" if setup.lora_targets == "all-linear" else \
        rf".*\.{_TARGETS[setup.lora_targets]}$"
    dropout = LORA_DROPOUT if setup.lora_dropout else 0.0
    lora = LoraConfig(r=setup.lora_rank, lora_alpha=2 * setup.lora_rank, target_modules=targets,
                      lora_dropout=dropout)
    try:  # PEFT's defaults: adapters in fp32 over a 16-bit base
        return get_peft_model(copy.deepcopy(model) if dropout else model, lora,
                              autocast_adapter_dtype=setup.adapter_fp32)
    except ValueError as err:  # PEFT adapts fused MoE experts as parameters, without dropout
        if not dropout or "lora_dropout" not in str(err):
            raise
    notes.append("PEFT adapts fused MoE expert weights without dropout; simulated with LoRA "
                 "dropout 0")
    lora.lora_dropout = 0.0
    return get_peft_model(model, lora, autocast_adapter_dtype=setup.adapter_fp32)


def _cast_adapters(model, dtype) -> None:
    """Adapters in ``dtype``: PEFT keeps them in fp32 over a quantised base whatever it is told."""
    for name, param in model.named_parameters():
        if "lora_" in name and param.dtype != dtype:
            param.data = param.data.to(dtype)


def _base(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _layers(model, stacks: list[Stack]) -> dict[Any, tuple[str, int]]:
    """The transformer blocks of each stack, in order (the outermost ModuleLists of blocks)."""
    import torch

    lists = [(name, m) for name, m in model.named_modules()
             if isinstance(m, torch.nn.ModuleList) and re.search(r"(^|\.)(layers|h|block|layer)$", name)]
    outer = [(name, m) for name, m in lists
             if not any(name.startswith(other + ".") for other, _ in lists if other != name)]
    if len(outer) != len(stacks):
        raise RuntimeError(f"expected {len(stacks)} layer stacks, found {[n for n, _ in outer]}")
    found: dict[Any, tuple[str, int]] = {}
    for stack, (_, blocks) in zip(stacks, outer, strict=True):
        for index, block in enumerate(blocks):
            found[block] = (stack.name, index)
    return found


def _detach_head(model):
    """Take the output layer out of the model: a fused or chunked loss applies it itself."""
    import torch

    head = model.get_output_embeddings()

    class Passthrough(torch.nn.Module):
        def forward(self, hidden):
            return hidden

    model.set_output_embeddings(Passthrough())
    return head


@contextlib.contextmanager
def selective_recompute(setup: Setup) -> Iterator[None]:
    """Recompute the attention core in backward (Korthikanti's selective recompute).

    Every family calls its attention through transformers' attention
    interface; while this is active, the interface's SDPA and eager entries
    run under ``torch.utils.checkpoint``, so their internals are rebuilt in
    backward instead of kept.
    """
    if setup.recompute != "selective" or not setup.training:
        yield
        return
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    mapping = ALL_ATTENTION_FUNCTIONS._global_mapping
    saved = dict(mapping)
    mapping["sdpa"] = _checkpointed(lambda module: sdpa_attention_forward)
    mapping["eager"] = _checkpointed(lambda module: sys.modules[
        type(module).__module__].eager_attention_forward)
    try:
        yield
    finally:
        mapping.clear()
        mapping.update(saved)


def _checkpointed(inner_for):
    from torch.utils.checkpoint import checkpoint

    def attention(module, query, key, value, attention_mask, **kwargs):
        inner = inner_for(module)
        return checkpoint(inner, module, query, key, value, attention_mask, use_reentrant=False,
                          **kwargs)

    return attention
