"""Recorders that write Headroom JSONL from a training run, for sizing the next one.

    from tracker.record import HFCallback, LightningCallback, Recorder

Importing this package imports neither torch nor a training framework. The
two callbacks subclass framework classes, so each is built on first access
(PEP 562 ``__getattr__``); ``Recorder`` needs no framework at all.
"""

from __future__ import annotations

from typing import Any

from tracker.record.loop import Recorder

__all__ = ["HFCallback", "LightningCallback", "Recorder"]


def __getattr__(name: str) -> Any:
    if name == "HFCallback":
        from tracker.record.hf import callback_class

        return callback_class()
    if name == "LightningCallback":
        from tracker.record.lightning import callback_class

        return callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
