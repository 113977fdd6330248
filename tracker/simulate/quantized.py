"""bitsandbytes' storage, without bitsandbytes: 4-bit / 8-bit frozen linears and 8-bit Adam.

bitsandbytes needs its CUDA kernels, so the simulation stands in for it with
modules that hold exactly what it holds and allocate what its kernels
allocate: a 4-bit weight is packed two per byte with one absmax per 64
weights (one byte each, plus one fp32 per 256 blocks with double
quantisation, Dettmers et al. 2023); each matmul dequantises the whole weight
in the dtype it was quantised from (fp16 for bitsandbytes < 0.43 and Lightning's
plugin), then casts it to the compute dtype (``dequantize_4bit(B, state).to(A.dtype)``),
and its autograd function keeps the input for backward as an attribute of its
context (``MatMul4Bit`` stores ``ctx.tensors = (A, B)``, not a saved tensor), so
the input lives as long as the graph does, not only until its backward. 8-bit Adam keeps two
uint8 moments with one fp32 absmax per 256 values, and 32-bit moments for
tensors under 4,096 elements (bitsandbytes' ``min_8bit_size``); its update is
one fused kernel, so it allocates nothing while stepping. Paged optimizers
keep large tensors' state in unified memory, which PyTorch does not count.
"""

from __future__ import annotations

import math

NF4_BLOCK = 64
NESTED_BLOCK = 256
ADAM8_BLOCK = 256
MIN_8BIT_SIZE = 4096
PAGED_MIN = 100_000  # bitsandbytes pages the state of tensors from 1e5 elements


def quantized_linear_class():
    """The frozen quantised linear (built lazily: it subclasses torch.nn.Linear)."""
    import torch

    class QuantizedLinear(torch.nn.Linear):
        """A frozen linear stored as bitsandbytes stores it; PEFT wraps it like any Linear."""

        def __init__(self, base: torch.nn.Module, bits: int, double_quant: bool,
                     compute_dtype: torch.dtype, saves_input: bool = True,
                     state_dtype: torch.dtype | None = None) -> None:
            torch.nn.Module.__init__(self)
            if isinstance(base, torch.nn.Linear):
                self.in_features, self.out_features = base.in_features, base.out_features
            else:  # transformers' Conv1D (GPT-2) stores its weight as (in, out)
                self.in_features, self.out_features = base.weight.shape
            self.bits, self.compute_dtype, self.saves_input = bits, compute_dtype, saves_input
            self.state_dtype = state_dtype or compute_dtype  # the dtype it was quantised from
            # Inputs kept on the graph's contexts until the loop drops the graph (the simulated
            # step empties the list then); None: saved for backward and freed by it.
            self.held: list | None = None
            n = self.in_features * self.out_features
            device = base.weight.device
            packed = math.ceil(n * bits / 8)
            self.weight = torch.nn.Parameter(
                torch.empty(packed, 1, dtype=torch.uint8, device=device), requires_grad=False)
            self.bias = None if base.bias is None else torch.nn.Parameter(
                base.bias.detach().to(compute_dtype), requires_grad=False)
            for name, tensor in _constants(n, bits, double_quant, device).items():
                self.register_buffer(name, tensor)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.project(x)

        def project(self, x: torch.Tensor) -> torch.Tensor:
            """The layer applied outside the module's hooks (a loss calling the head per chunk)."""
            out_dtype = x.dtype
            x = x.to(self.compute_dtype)  # bitsandbytes' Linear4bit casts its input
            return _MatMul.apply(x, self).to(out_dtype)

        def dequantize(self, dtype: torch.dtype) -> torch.Tensor:
            """What the dequantisation allocates: fp32 block scales, the weight in the dtype it
            was quantised from, and its cast to ``dtype`` while that one is still alive."""
            scales = self.absmax.to(torch.float32) if self.absmax.dtype != torch.float32 else None
            weight = torch.empty(self.out_features, self.in_features, dtype=self.state_dtype,
                                 device=self.weight.device)
            del scales
            return weight.to(dtype)

    class _MatMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, layer):
            ctx.layer = layer
            # MatMul4Bit keeps A whatever is frozen (bitsandbytes < 0.43.2); torchao's NF4 does not
            if layer.saves_input and layer.held is not None:
                layer.held.append(x)
            else:
                ctx.save_for_backward(x if layer.saves_input else x.new_empty(0))
            weight = layer.dequantize(x.dtype)
            return torch.nn.functional.linear(
                x, weight, None if layer.bias is None else layer.bias.to(x.dtype))

        @staticmethod
        def backward(ctx, grad):
            weight = ctx.layer.dequantize(grad.dtype)
            return grad @ weight, None

    return QuantizedLinear


def _constants(n: int, bits: int, double_quant: bool, device) -> dict:
    import torch

    if bits == 8:  # LLM.int8(): one fp32 scale per output row is in ``absmax``
        return {"absmax": torch.empty(max(1, n // 4096), dtype=torch.float32, device=device)}
    blocks = math.ceil(n / NF4_BLOCK)
    if not double_quant:
        return {"absmax": torch.empty(blocks, dtype=torch.float32, device=device)}
    return {"absmax": torch.empty(blocks, dtype=torch.uint8, device=device),
            "nested_absmax": torch.empty(math.ceil(blocks / NESTED_BLOCK), dtype=torch.float32,
                                         device=device)}


def adam_bnb_class():
    """bitsandbytes' AdamW (8-bit or 32-bit, paged or not) by its memory (built lazily: it
    subclasses torch.optim). A paged optimizer allocates the state of a tensor of
    ``PAGED_MIN`` elements or more in CUDA unified memory (``get_state_buffer``), outside
    PyTorch's allocator and its counters; smaller tensors' state is ordinary device memory."""
    import torch

    class AdamWBnb(torch.optim.Optimizer):
        def __init__(self, params, bits: int = 8, paged: bool = False, lr: float = 1e-4) -> None:
            super().__init__(params, {"lr": lr})
            self.bits, self.paged = bits, paged

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None and not self.state[p]:
                        outside = self.paged and p.numel() >= PAGED_MIN
                        self.state[p].update({} if outside else _adam_state(p, self.bits))
            return None  # one fused kernel per tensor: it updates in place

    return AdamWBnb


def _adam_state(p, bits: int) -> dict:
    import torch

    n = p.numel()
    if bits == 32 or n < MIN_8BIT_SIZE:
        return {"state1": torch.zeros_like(p, dtype=torch.float32),
                "state2": torch.zeros_like(p, dtype=torch.float32)}
    blocks = math.ceil(n / ADAM8_BLOCK)
    return {"state1": torch.zeros_like(p, dtype=torch.uint8),
            "state2": torch.zeros_like(p, dtype=torch.uint8),
            "absmax1": torch.zeros(blocks, dtype=torch.float32, device=p.device),
            "absmax2": torch.zeros(blocks, dtype=torch.float32, device=p.device)}
