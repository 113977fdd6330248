"""One simulated step of a shortened model, under the segment tracker.

Training: a first optimizer step on zero gradients creates the optimizer
state, as a real first step would; the tracked step then runs forward and
backward (twice with gradient accumulation, so gradients are held across
micro-batches) and the optimizer step. Inference: a prefill of the prompt
with the KV cache, keeping only the last position's logits, as
``generate`` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from core.memory import Setup
from tracker.simulate.config import ENCODER_DECODER, Stack, with_counts


@dataclass(frozen=True)
class Measured:
    """Segment peaks of one shortened model, in bytes."""

    peaks: dict[tuple, tuple[int, dict[str, int]]]
    optimizer_state: int  # persistent optimizer state after the step
    notes: tuple[str, ...] = ()


def measure(config: dict[str, Any], setup: Setup, stacks: list[Stack],
            counts: dict[str, int], fake: bool = True) -> Measured:
    """Build the model with ``counts`` blocks per stack and track one step.

    With ``fake`` off the step really runs on CPU tensors (slowly; tests compare the two).
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tracker.simulate.build import build, selective_recompute
    from tracker.simulate.cuda import cuda_rules
    from tracker.simulate.gpu_paths import gpu_paths
    from tracker.simulate.segments import tracker_class

    short = [replace(s, count=counts[s.name]) for s in stacks]
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext()
    with _quiet(), gpu_paths(), selective_recompute(setup), cuda_rules():
        built = build(with_counts(config, counts), setup, short, mode)
        with mode:
            inputs = _inputs(config, setup)
            optimizer = _optimizer(built.trainable(), setup) if setup.training else None
            if optimizer is not None:
                _first_step(built.trainable(), optimizer)
            tracker = tracker_class()(built.model, built.layers, _roles(short), _final(short))
            tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
            # a head the loss applies itself is no longer the model's: track its weight too
            tracker.track_external(built.model, *(m for m in (built.head, optimizer) if m),
                                   *tensors)
            with tracker:
                if setup.training:
                    _train(built, setup, inputs, optimizer, tracker)
                else:
                    _infer(built, config, inputs)
            state = _state_bytes(optimizer) if optimizer is not None else 0
    return Measured(tracker.peaks, state, tuple(built.notes))


def _roles(stacks: list[Stack]) -> dict[tuple[str, int], tuple[tuple[str, str], ...]]:
    """The segment labels of each block: prefix blocks by index, then first and last."""
    roles = {}
    for s in stacks:
        for i in range(s.count):
            if i < s.prefix:
                names: tuple[str, ...] = (f"prefix{i}",)
            else:
                names = tuple(r for r, at in (("first", s.prefix), ("last", s.count - 1))
                              if i == at) or ("mid",)
            roles[(s.name, i)] = tuple((s.name, n) for n in names)
    return roles


def _final(stacks: list[Stack]) -> dict[str, dict[str, int]]:
    """The block each phase ends a stack with: the last going forward, the first going back."""
    return {"forward": {s.name: s.count - 1 for s in stacks},
            "backward": {s.name: 0 for s in stacks}}


def _inputs(config: dict[str, Any], setup: Setup) -> dict[str, Any]:
    import torch

    ids = torch.zeros(setup.micro_batch, setup.seq_len, dtype=torch.long)
    if not setup.training:
        if config["model_type"] in ENCODER_DECODER:
            return {"input_ids": ids, "decoder_input_ids": torch.zeros(setup.micro_batch, 1,
                                                                       dtype=torch.long)}
        return {"input_ids": ids}
    # Training recipes turn the KV cache off (TRL, PEFT's examples, any run with recompute);
    # left on, transformers 5 copies GPT-2's keys and values into it.
    return {"input_ids": ids, "labels": torch.zeros_like(ids), "use_cache": False}


def _optimizer(params: list, setup: Setup):
    import torch

    from tracker.simulate.quantized import adam_bnb_class

    if setup.optimizer == "adamw":  # transformers' default since torch 2.8: adamw_torch_fused
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if setup.optimizer in ("adamw-8bit", "paged-adamw-8bit", "paged-adamw"):
        return adam_bnb_class()(params, bits=32 if setup.optimizer == "paged-adamw" else 8,
                                paged=setup.optimizer.startswith("paged"))
    if setup.optimizer in ("sgd", "sgd-momentum"):
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9 if setup.optimizer != "sgd" else 0.0)
    if setup.optimizer == "adafactor":  # as the HF Trainer sets it up
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=1e-3, scale_parameter=False, relative_step=False)
    return None


def _first_step(params: list, optimizer) -> None:
    """Create the optimizer state as a first step does, on zero gradients."""
    import torch

    for p in params:
        p.grad = torch.zeros_like(p)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _train(built, setup: Setup, inputs: dict[str, Any], optimizer, tracker) -> None:
    """Two micro-batches (the second with gradients held when they accumulate), then the step.

    A loop that holds the last micro-batch's outputs (LitGPT) keeps its graph through the
    next forward, and the step always has a next forward: two micro-batches are run even
    without accumulation, the gradients freed between them as the step's zero_grad does.
    """
    from core.memory.frameworks import framework

    keeps = framework(setup.framework).keeps_last_graph
    micro_steps = 2 if keeps else min(setup.grad_accum, 2)
    last: list = []  # the previous micro-batch's loss, logits and count of held inputs
    for micro in range(micro_steps):
        tracker.next_micro_step(micro)
        with _autocast(built.autocast):
            loss, held = _loss(built, setup, inputs, last)
        loss.backward()
        last[:] = [loss, held, len(built.held)]
        del loss, held
        if not keeps:
            _drop(built, last)
        if setup.grad_accum == 1 and micro + 1 < micro_steps:
            for p in built.trainable():
                p.grad = None
    tracker.micro = 0
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    _drop(built, last)


def _drop(built, last: list) -> None:
    """The loop lets the last micro-batch's outputs go: its graph dies, and with it the 4-bit
    matmul inputs bitsandbytes kept on the graph's contexts."""
    if last:
        del built.held[:last[-1]]
    last.clear()


def _loss(built, setup: Setup, inputs: dict[str, Any], last: list) -> tuple[Any, Any]:
    """The loss, and what the training loop holds beside it through backward. The previous
    micro-batch's outputs (``last``) go once this forward's exist."""
    from core.memory.activations import LOSS_CHUNKS
    from core.memory.frameworks import framework
    from tracker.simulate.loss import (
        chunked_cross_entropy,
        fused_linear_cross_entropy,
        head_chunks,
        per_chunk_cross_entropy,
    )

    if built.head is None:
        out = built.model(**inputs)
        _drop(built, last)
        return out.loss, None
    kwargs = {k: v for k, v in inputs.items() if k != "labels"}
    hidden, labels = built.model(**kwargs).logits, inputs["labels"]
    tokens = framework(setup.framework).loss_chunk_tokens
    if tokens and setup.loss != "fused":
        hidden = head_chunks(hidden, built.head, tokens)  # LitGPT's model returns the chunks
    _drop(built, last)  # the loop's `logits = model(...)` lets the last micro-batch's go
    if setup.loss == "fused":
        return fused_linear_cross_entropy(hidden, built.head.weight, labels), None
    if tokens:
        return per_chunk_cross_entropy(hidden, labels, tokens), hidden
    return chunked_cross_entropy(hidden, built.head, labels, LOSS_CHUNKS), None


def _infer(built, config: dict[str, Any], inputs: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        if config["model_type"] in ("bert", "roberta"):  # an encoder scores every position
            built.model(**inputs)
            return
        kwargs = {} if config["model_type"] in ENCODER_DECODER else {"logits_to_keep": 1}
        out = built.model(**inputs, use_cache=True, **kwargs)
        next_logits = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        del out, next_logits


@contextlib.contextmanager
def _autocast(dtype) -> Iterator[None]:
    import torch

    if dtype is None:
        yield
        return
    with torch.autocast("cpu", dtype=dtype):
        yield


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the libraries' advice meant for real training (use_cache, deprecations)."""
    import warnings

    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.set_verbosity(level)


def _state_bytes(optimizer) -> int:
    """Bytes of the optimizer's persistent state (what stays between steps)."""
    import torch

    from tracker.simulate.segments import allocation

    return sum(allocation(v) for state in optimizer.state.values() for v in state.values()
               if isinstance(v, torch.Tensor))
