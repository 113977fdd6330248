"""Losses that replace the model's own: Liger-Kernel's fused linear cross-entropy (HF's
``use_liger_kernel``) by its memory, torchtune's chunked cross-entropy and LitGPT's.

Liger never builds the b x s x vocab logits: in forward it walks the tokens
in chunks of about ``b·s·hidden / vocab``, computes each chunk's logits,
turns them into their gradient in place, and accumulates the gradients of
the hidden states and of the output weight, which it keeps for backward.
This function allocates the same tensors; the in-place kernels (softmax
into gradient, ``addmm`` into the weight gradient) allocate nothing and are
left out.
"""

from __future__ import annotations

import math


def fused_linear_cross_entropy(hidden, weight, labels):
    """The mean cross-entropy of ``hidden @ weight.T`` against ``labels``, Liger-style."""
    return _function().apply(hidden, weight, labels)


def chunked_cross_entropy(hidden, head, labels, chunks: int):
    """torchtune's loss: the output layer and an upcast cross-entropy applied to
    ``chunks`` slices of the sequence, so no fp32 b x s x vocab tensor is ever whole."""
    import torch.nn.functional as F

    # the layer's weight, not the module: the memory tracker counts a module called once a step
    logits = [F.linear(part, head.weight, head.bias) for part in hidden.chunk(chunks, dim=1)]
    total = sum(F.cross_entropy(part.float().flatten(0, 1), target.flatten(), reduction="sum")
                for part, target in zip(logits, labels.chunk(chunks, dim=1), strict=True))
    return total / labels.numel()


def head_chunks(hidden, head, tokens: int) -> list:
    """LitGPT's output layer: its model calls the head on ``tokens``-token slices
    (``lm_head_chunk_size``) and returns the list, which the loop's ``logits`` holds."""
    import torch.nn.functional as F

    project = getattr(head, "project", None) or (lambda part: F.linear(part, head.weight, head.bias))
    return [project(part) for part in hidden.split(tokens, dim=1)]


def per_chunk_cross_entropy(logits: list, labels, tokens: int):
    """LitGPT's ``chunked_cross_entropy`` on the head's chunks, in the compute dtype, without
    an upcast."""
    import torch.nn.functional as F

    total = sum(F.cross_entropy(part.flatten(0, 1), target.flatten(), reduction="sum")
                for part, target in zip(logits, labels.split(tokens, dim=1), strict=True))
    return total / labels.numel()


def _chunk(tokens: int, vocab: int, hidden: int) -> int:
    """Liger's chunk size: the next power of two of tokens / ceil(vocab / hidden)."""
    return 1 << max(0, math.ceil(math.log2(max(1, math.ceil(tokens / math.ceil(vocab / hidden))))))


def _function():
    import torch

    class FusedLinearCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, hidden, weight, labels):
            x = hidden.reshape(-1, hidden.shape[-1])
            dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else x.dtype
            x16, w16 = x.to(dtype), weight.to(dtype)
            grad_input = torch.zeros_like(x)
            grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
            losses = torch.zeros(x.shape[0], dtype=torch.float32, device=x.device)
            step = _chunk(x.shape[0], weight.shape[0], x.shape[1])
            for start in range(0, x.shape[0], step):
                logits = x16[start:start + step] @ w16.t()  # softmax and its gradient: in place
                grad_input[start:start + step] = logits @ w16
                del logits
            ctx.save_for_backward(grad_input, grad_weight)
            ctx.shape = hidden.shape
            return losses.sum() / x.shape[0]

        @staticmethod
        def backward(ctx, grad):
            grad_input, grad_weight = ctx.saved_tensors
            return grad_input.view(ctx.shape), grad_weight, None

    return FusedLinearCrossEntropy
