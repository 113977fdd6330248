"""A fake GPU for CPU tests: real tensors, a card-sized budget, torch's own OOM.

:class:`FakeDevice` is a ``TorchDispatchMode`` that counts the bytes of every
live tensor storage a training step makes (parameters counted from the
start) and raises ``torch.OutOfMemoryError`` with CUDA's message when an op's
outputs would not fit the capacity, as the caching allocator does.
:func:`as_recorders_memory` makes it the recorders' memory source, so a tiny
model trained on the CPU is recorded as if it ran on that card.
"""

from __future__ import annotations

from typing import Any

GIB = 1024**3
MIB = 1024**2


def fake_device(capacity_gib: float, tensors=()):
    """A :class:`FakeDevice` (built on first use: torch is imported lazily)."""
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class FakeDevice(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.capacity = int(capacity_gib * GIB)
            self.live: dict[int, tuple[Any, int]] = {}
            for t in tensors:
                self._add(t)
            self.peak = self.in_use

        @property
        def in_use(self) -> int:
            return sum(n for _, n in self.live.values())

        def reset_peak(self) -> None:
            self.peak = self.in_use

        def _add(self, t) -> int:
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if not key or key in self.live:
                return 0
            self.live[key] = (StorageWeakRef(storage), storage.nbytes())
            return storage.nbytes()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
                del self.live[key]
            before = self.in_use
            new = sum(self._add(t) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
            if before + new > self.capacity:
                raise torch.OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {new / MIB:.2f} MiB. GPU 0 has a "
                    f"total capacity of {self.capacity / GIB:.2f} GiB of which "
                    f"{(self.capacity - before) / MIB:.2f} MiB is free. Of the allocated memory "
                    f"{before / GIB:.2f} GiB is allocated by PyTorch, and 0 bytes is reserved "
                    "by PyTorch but unallocated.")
            self.peak = max(self.peak, before + new)
            return out

    return FakeDevice()


def as_recorders_memory(monkeypatch, device, name: str) -> None:
    """Make ``device`` the recorders' GPU: its peaks, its name and capacity."""
    from tracker.record import device as memory

    def peaks(devices, reset=True):
        found = (device.peak / GIB, device.peak / GIB)
        if reset:
            device.reset_peak()
        return found

    monkeypatch.setattr(memory, "cuda_ready", lambda: True)
    monkeypatch.setattr(memory, "devices_of", lambda model: [0])
    monkeypatch.setattr(memory, "peaks", peaks)
    monkeypatch.setattr(memory, "gpu_facts", lambda devices: {
        "gpu_model": name, "gpu_mem_gib": round(device.capacity / GIB, 2)})
