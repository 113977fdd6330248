"""What a CUDA step keeps that the same step on the CPU would not: autocast's lists, fused dropout.

The simulation runs on fake CPU tensors (fake CUDA tensors abort the process
in autograd on a CPU-only torch: autograd asks the CUDA device guard for a
stream). Two CPU kernels keep other tensors than their CUDA twins:

- CPU autocast casts matmuls to 16 bits like CUDA's, but leaves softmax,
  layer norm and the fp32 math ops alone, where CUDA's autocast runs them in
  fp32 (GPT-2's eager softmax keeps 4 bytes per score on a GPU, 2 on a CPU);
  and it casts a whole cross-entropy to fp32 where CUDA autocasts its
  log-softmax and NLL parts.
- CPU dropout multiplies by a saved noise tensor of the input's dtype; CUDA
  calls the fused kernel, which saves a one-byte mask.
- CPU SDPA takes the math kernel (which keeps the attention scores) when
  dropout is on; CUDA takes a fused one (flash, or memory-efficient with a
  mask), which keeps only the output and a log-sum-exp.

While :func:`cuda_rules` is active (in this thread) CPU kernels follow CUDA's
(ATen's ``autocast_mode.cpp`` lists and ``Dropout.cpp``); outside it they
pass calls through unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from functools import cache

# Ops CUDA autocast runs in fp32 (policy "fp32") that CPU autocast leaves alone.
_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
         "reciprocal", "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor",
         "pow.Scalar", "softplus", "layer_norm", "native_layer_norm", "group_norm",
         "frobenius_norm.dim", "cosine_similarity", "dist", "pdist", "renorm", "logsumexp")
# Ops with an optional output dtype that CUDA autocast sets to fp32 ("fp32_set_opt_dtype").
_FP32_OUT = ("softmax.int", "log_softmax.int", "cumsum", "cumprod", "sum", "sum.dim_IntList",
             "linalg_vector_norm")
# Ops that run in the widest input dtype ("promote").
_PROMOTE = ("addcdiv", "addcmul", "atan2", "cross", "dot", "index_put", "scatter_add")

_state = threading.local()


@contextlib.contextmanager
def cuda_rules() -> Iterator[None]:
    """While active (in this thread), CPU autocast follows CUDA's fp32 and promote lists."""
    _registered()
    before = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = before


@cache
def _registered():
    """Register the kernels once per process; they are inert unless :func:`cuda_rules` is on."""
    import torch

    library = torch.library.Library("aten", "IMPL")
    library.impl("dropout", _dropout, "AutogradCPU")
    library.impl("scaled_dot_product_attention", _attention, "AutogradCPU")
    with warnings.catch_warnings():  # replacing CPU autocast's own cross-entropy kernel is the point
        warnings.simplefilter("ignore", UserWarning)
        library.impl("cross_entropy_loss", _cross_entropy, "AutocastCPU")
    for name in _FP32:
        _impl(library, name, _fp32)
    for name in _FP32_OUT:
        _impl(library, name, _fp32_out)
    for name in _PROMOTE:
        _impl(library, name, _promote)
    return library


def _impl(library, name: str, policy) -> None:
    import torch

    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base)
    op = getattr(packet, overload or "default")
    library.impl(name, _kernel(op, policy), "AutocastCPU")


def _kernel(op, policy):
    import torch

    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(keys):
            if getattr(_state, "on", False):
                args, kwargs = policy(op, args, kwargs)
            return op(*args, **kwargs)

    return kernel


def _dropout(input, p: float, train: bool):
    """CUDA's dropout: the fused kernel and its one-byte mask (``at::native_dropout``)."""
    import torch

    if getattr(_state, "on", False) and train and 0 < p < 1 and input.numel():
        return torch.ops.aten.native_dropout(input, p, train)[0]
    return torch.ops.aten.dropout.default.decompose(input, p, train)


def _attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
               is_causal: bool = False, scale=None, enable_gqa: bool = False):
    """SDPA as CUDA runs it: a fused kernel (flash, or memory-efficient with a mask or
    dropout), which keeps the output and a log-sum-exp, never the scores. The CPU
    dispatcher falls back to the math kernel for dropout, which keeps them."""
    import torch

    flash = attn_mask is None and query.shape[-1] == value.shape[-1]
    if getattr(_state, "on", False) and flash:
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, dropout_p, is_causal, scale=scale)[0]
    if getattr(_state, "on", False):  # a mask, or a V head size of its own: the efficient kernel
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill(
                attn_mask.logical_not(), float("-inf"))
        if attn_mask is not None:
            attn_mask = attn_mask.expand(query.shape[0], query.shape[1], -1, -1)
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, key, value, attn_mask, True, dropout_p, is_causal, scale=scale)[0]
    return torch.ops.aten.scaled_dot_product_attention.default.decompose(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)


def _cross_entropy(*args, **kwargs):
    """CUDA autocasts cross-entropy's parts (log-softmax to fp32, NLL in fp32), not the whole."""
    import torch

    op = torch.ops.aten.cross_entropy_loss.default
    if getattr(_state, "on", False):
        return op.decompose(*args, **kwargs)
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
    with torch._C._ExcludeDispatchKeyGuard(keys):
        args, kwargs = _fp32(op, args, kwargs)
        return op(*args, **kwargs)


def _is_half(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.dtype in (torch.float16, torch.bfloat16)


def _cast(value, dtype):
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype \
            and value.dtype != torch.float64:
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _fp32(op, args, kwargs):
    import torch

    return _cast(list(args), torch.float32), {k: _cast(v, torch.float32) for k, v in kwargs.items()}


def _fp32_out(op, args, kwargs):
    """Set the output dtype to fp32 unless the caller gave one (CUDA: fp32_set_opt_dtype)."""
    import torch

    if not args or not _is_half(args[0]):
        return args, kwargs
    names = [a.name for a in op._schema.arguments]
    position = names.index("dtype")
    if position < len(args):
        if args[position] is None:
            args = (*args[:position], torch.float32, *args[position + 1:])
    elif kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": torch.float32}
    return args, kwargs


def _promote(op, args, kwargs):
    import torch

    floats = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)
              and a.is_floating_point()]
    if any(t.dtype == torch.float32 for t in floats) and any(_is_half(t) for t in floats):
        return _fp32(op, args, kwargs)
    return args, kwargs
