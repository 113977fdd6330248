"""PyTorch's memory tracker, with the peak of each segment of the step kept apart.

A step's memory over time is made of segments: before the blocks, inside
the first and the last block, after them, in each phase. In a stack of
identical blocks the memory of each segment is an affine function of the
number of blocks (what every block keeps, plus what this segment holds for a
moment), so two shortened models give each segment's peak for any depth
(:mod:`tracker.simulate.extrapolate`). Middle blocks never peak above the
first and the last: their memory lies between the two.
"""

from __future__ import annotations

from typing import Any

# MemTracker's categories, grouped as the report shows them.
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "temporaries")
GROUPS = {"Parameter": "parameters", "Buffer": "parameters", "Gradient": "gradients",
           "Optstate": "optimizer_state", "Activation": "activations", "Other": "activations",
           "Temp": "temporaries"}

Label = tuple  # (phase, micro-step, where...)
MIN_BLOCK = 512  # the CUDA caching allocator rounds every allocation up to 512 bytes


def allocation(tensor) -> int:
    """Bytes the CUDA caching allocator would hand out for a tensor's storage."""
    return -(-tensor.untyped_storage().nbytes() // MIN_BLOCK) * MIN_BLOCK


class _NoHook:
    """Stands in for a hook handle on a frozen parameter."""

    def remove(self) -> None:
        return None


_NO_HOOK = _NoHook()


def tracker_class():
    """The segment-aware tracker (built lazily: it subclasses torch's MemTracker)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    class SegmentTracker(MemTracker):
        """Keeps, for every segment label, the largest total and its breakdown."""

        def __init__(self, root, layers: dict[Any, tuple[str, int]],
                     roles: dict[tuple[str, int], tuple[str, ...]],
                     final: dict[str, dict[str, int]]) -> None:
            super().__init__()
            prefix = type(root).__name__
            names = {m: n for n, m in root.named_modules()}
            self._fqn = {f"{prefix}.{names[m]}": place for m, place in layers.items()}
            self._roles = roles  # (stack, index) -> labels its segment counts under
            self._final = final  # phase -> stack -> index of the block it ends with
            self.micro = 0
            self.optimizer_state_bytes = 0
            self.peaks: dict[Label, tuple[int, dict[str, int]]] = {}
            self._phase = ""
            self._last: tuple[str, int] | None = None
            self._done: set[str] = set()
            self._accumulating = False
            self._grad_shapes = {(tuple(p.shape), p.dtype) for p in root.parameters()
                                 if p.requires_grad}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self._accumulating = self._is_accumulation(func, args, kwargs)
            return super().__torch_dispatch__(func, types, args, kwargs)

        def _is_accumulation(self, func, args, kwargs) -> bool:
            """A gradient summed into another by the autograd engine (a tied weight's two uses,
            a gradient held across micro-batches). On a GPU the engine adds in place; a fake
            tensor is a tensor subclass, for which it allocates the sum, so the moment when
            both addends and the sum are alive is not a real one."""
            import torch

            if func is not torch.ops.aten.add.Tensor or kwargs or len(args) != 2 \
                    or not self._mod_tracker.is_bw:
                return False
            a, b = args
            return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype \
                and (tuple(a.shape), a.dtype) in self._grad_shapes

        def _update_peak_stats(self, peak_state) -> None:
            # Replaces MemTracker's per-module peaks (unused here, and costly per op) with
            # per-segment ones.
            if self._accumulating:
                return
            snap = next(iter(self._curr_mem_snap.values()), None)
            if snap is None:
                return
            total = snap["Total"]
            for label in self._labels():
                best = self.peaks.get(label)
                if best is None or total > best[0]:
                    self.peaks[label] = (total, {getattr(k, "value", k): v for k, v in snap.items()})

        def _track_module_params_and_buffers(self, module, install_grad_hooks: bool = True):
            # MemTracker hooks every parameter's gradient; a frozen one (a LoRA base, a model
            # in inference) cannot take a hook and has no gradient to follow.
            for param in module.parameters():
                if not param.requires_grad:
                    self._param_to_grad_hook_handles.setdefault(param, (_NO_HOOK, _NO_HOOK))
            return super()._track_module_params_and_buffers(module, install_grad_hooks)

        def next_micro_step(self, micro: int) -> None:
            """Start another micro-batch (MemTracker refuses a second forward of the root)."""
            self.micro = micro
            self.reset_mod_stats()

        def _labels(self) -> list[Label]:
            phase = "optimizer step" if self._in_opt else (
                "backward" if self._mod_tracker.is_bw else "forward")
            if self._phase == "optimizer step" and phase == "forward":
                phase = self._phase  # zero_grad after the step belongs to the step
            if phase != self._phase:
                self._phase, self._last, self._done = phase, None, set()
            inside = [self._fqn[n] for n in self._mod_tracker.parents if n in self._fqn]
            if inside:
                place = max(inside, key=lambda p: p[1]) if phase == "forward" else min(
                    inside, key=lambda p: p[1])
                self._last = place
                return [(phase, self.micro, "in", *role) for role in self._roles[place]]
            if self._last is not None:
                stack, index = self._last
                if self._final.get(phase, {}).get(stack) != index:
                    # between two blocks: still the previous block's segment
                    return [(phase, self.micro, "in", *r) for r in self._roles[self._last]]
                self._done.add(stack)
                self._last = None
            return [(phase, self.micro, "after", *sorted(self._done))]

    return SegmentTracker
