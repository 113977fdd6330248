"""An exception that ends a run, as the final event of its log.

OOMs get their own kind because the diagnostics and the sizing wizard treat
them apart from other crashes. HF Trainer has no exception hook, so its
recorder chains ``sys.excepthook``: it runs when an uncaught exception is
about to end the process, before the interpreter exits.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

MESSAGE_CHARS = 500
TRACEBACK_CHARS = 4000


def event_kind(exc: BaseException) -> str | None:
    """ "oom", "interrupted" or "exception"; None for a clean ``sys.exit(0)``."""
    if isinstance(exc, SystemExit):
        return None if exc.code in (None, 0) else "exception"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if is_oom(exc):
        return "oom"
    return "exception"


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA, XPU), MPS's RuntimeError, or host MemoryError."""
    if isinstance(exc, MemoryError):
        return True
    if any(cls.__name__ == "OutOfMemoryError" for cls in type(exc).__mro__):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def describe(exc: BaseException) -> tuple[str, dict[str, Any]]:
    """A one-line message and the event data: the exception type and the traceback's tail."""
    first = (str(exc).strip().splitlines() or [""])[0]
    message = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return message[:MESSAGE_CHARS], {
        "error": type(exc).__name__,
        "traceback": trace[-TRACEBACK_CHARS:],
    }


class ExceptHook:
    """Calls ``on_crash(exc)`` for an uncaught exception, then the previous hook."""

    def __init__(self, on_crash: Callable[[BaseException], None]) -> None:
        self._on_crash: Callable[[BaseException], None] | None = on_crash
        self._previous = sys.excepthook
        sys.excepthook = self

    def __call__(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        try:
            if self._on_crash is not None:
                self._on_crash(exc)
        finally:
            self._previous(exc_type, exc, tb)

    def remove(self) -> None:
        """Restore the previous hook, or go quiet if another hook was chained after this one."""
        self._on_crash = None
        if sys.excepthook is self:
            sys.excepthook = self._previous
