"""Bytes per parameter and per activation for each precision and optimizer.

The tables follow EleutherAI's "Transformer Math 101" (2023) and the ZeRO
paper (Rajbhandari et al., 2020): mixed-precision AdamW keeps a 16-bit compute
copy of the weights (2 B), 16-bit gradients (2 B) and an fp32 master copy plus
two fp32 moments (12 B), 16 B/param. Real frameworks keep the gradients in fp32
for the update (Megatron's main_grad, DeepSpeed's fp32 partitions, HF AMP's fp32
parameters), 18 B/param: :attr:`Setup.fp32_grads` says which. Pure 16-bit
training keeps Adam's moments in the parameter dtype (torchao's measurements of
bf16 AdamW vs 8-bit Adam confirm it).
Quantised storage follows Dettmers et al., "QLoRA" (2023).
"""

from __future__ import annotations

from dataclasses import dataclass

# Storage bytes per element.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "nf4": 0.5, "fp4": 0.5,
}

# bitsandbytes 4-bit: one fp32 absmax per 64 weights (0.5 bit/param); double quantisation
# stores those as int8 with one fp32 constant per 256 blocks (QLoRA paper, section 3).
NF4_BLOCK = 64
NF4_CONSTANTS = 4.0 / NF4_BLOCK
NF4_DOUBLE_QUANT_CONSTANTS = 1.0 / NF4_BLOCK + 4.0 / (NF4_BLOCK * 256)
# LLM.int8(): one fp32 scale per output row, negligible next to 1 B/param; kept as a ratio.
INT8_CONSTANTS = 0.01


@dataclass(frozen=True)
class Precision:
    """How one training precision stores weights, gradients, master copy and activations."""

    weight: float  # bytes per parameter of the compute copy
    grad: float  # bytes per gradient element
    master: float  # bytes per parameter of an fp32 master copy kept by the optimizer
    state: float  # bytes per element of optimizer moments
    activation: float  # bytes per activation element


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision(weight=4, grad=4, master=0, state=4, activation=4),
    "fp16": Precision(weight=2, grad=2, master=0, state=2, activation=2),
    "bf16": Precision(weight=2, grad=2, master=0, state=2, activation=2),
    "mixed-fp16": Precision(weight=2, grad=2, master=4, state=4, activation=2),
    "mixed-bf16": Precision(weight=2, grad=2, master=4, state=4, activation=2),
    # fp8 linears (Transformer Engine, torchao float8) keep bf16 params and an fp32 master;
    # torchao casts to fp8 on the fly and saves the 16-bit input and weight for backward,
    # so nothing persists in fp8 (torchtitan measured 77.0 -> 76.8 GiB).
    "fp8": Precision(weight=2, grad=2, master=4, state=4, activation=2),
}

# Precisions a frozen base may be stored in (LoRA, QLoRA, inference).
FROZEN_STORAGE = ("fp32", "fp16", "bf16", "fp8", "int8", "nf4")
QUANTIZED = ("int8", "nf4")


def frozen_bytes(storage: str, quant_type: str = "nf4", double_quant: bool = True) -> float:
    """Bytes per parameter of a frozen, possibly quantised, weight."""
    if storage == "nf4":
        return DTYPE_BYTES[quant_type] + (
            NF4_DOUBLE_QUANT_CONSTANTS if double_quant else NF4_CONSTANTS
        )
    if storage == "int8":
        return 1.0 + INT8_CONSTANTS
    return DTYPE_BYTES[storage]


def optimizer_state_bytes(optimizer: str, state: float) -> float:
    """Bytes of optimizer moments per trainable parameter (no master copy).

    AdamW keeps two moments; bitsandbytes 8-bit Adam stores each in one byte
    with an fp32 constant per 256-element block (Dettmers et al., 2021;
    bitsandbytes/optim/optimizer.py); its 32-bit paged AdamW keeps fp32 moments
    whatever the parameters' dtype; SGD with momentum keeps
    one; Adafactor's factored moments are counted per matrix elsewhere.
    """
    return {
        "adamw": 2 * state,
        "adamw-8bit": 2.0 + 8.0 / 256,  # one fp32 absmax per 256-element block per state
        "paged-adamw-8bit": 2.0 + 8.0 / 256,
        "paged-adamw": 2 * 4.0,  # bitsandbytes' 32-bit paged AdamW keeps fp32 moments
        "sgd": 0.0,
        "sgd-momentum": state,
        "adafactor": 0.0,
        "none": 0.0,
    }[optimizer]


OPTIMIZERS = ("adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd", "sgd-momentum",
              "adafactor", "none")
# bitsandbytes' paged optimizers allocate their moments with cudaMallocManaged: unified memory
# outside PyTorch's caching allocator (torch's counters never see it; nvidia-smi does while it is
# resident), which the driver pages to CPU memory when the GPU runs short.
PAGED = ("paged-adamw", "paged-adamw-8bit")
