"""Crash evidence in training logs: out-of-memory errors, NaN/Inf losses, loss-scale collapse.

Used by every console reader, and by any reader that has log text or series
to look at. A run that went out of memory is evidence too: it says "this
shape does not fit on this GPU", which the sizing fit and the diagnostics use.

:class:`CrashScanner` reads lines one at a time (an OOM message may be wrapped
over several lines; a traceback ends lines after it starts) and returns
:class:`~core.runlog.RunEvent` objects with ``step=None``: the caller knows the
step. What series show by themselves (a loss that turned NaN, a loss scale
that sank) is found by the diagnostics, from the series.

Event kinds and their ``data``:

- ``oom``: device memory ran out. ``tried_gib``, ``capacity_gib``, ``free_gib``,
  ``in_use_gib``, ``allocated_gib``, ``reserved_gib`` (all GiB, as far as the
  message states them), ``gpu`` (device index), ``device`` (``cuda``, ``hip``, ``mps``...).
- ``nan``: a NaN/Inf loss or gradient (``iteration`` when the message names it).
- ``loss_scale``: fp16 dynamic loss scaling says it reached its floor.
- ``exception``: a traceback ended in an exception (``type``), or the host's
  out-of-memory killer ended the process (``type`` = ``HostOutOfMemory``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.metrics import to_gib
from core.runlog import RunEvent

_NUM = r"\d+(?:\.\d+)?"
_SZ = rf"({_NUM}) ?(bytes|[KMGT]i?B)"
# PyTorch >= 2.1: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
# 79.15 GiB of which 1.20 GiB is free. ... Of the allocated memory 75.1 GiB is allocated by
# PyTorch, and 1.3 GiB is reserved by PyTorch but unallocated."
_OOM_FACTS = {
    "tried_gib": re.compile(rf"Tried to allocate {_SZ}"),
    "capacity_gib": re.compile(rf"has a total capacity of {_SZ}|{_SZ} total capacity"),
    "free_gib": re.compile(rf"of which {_SZ} is free|{_SZ} free"),
    "in_use_gib": re.compile(rf"has {_SZ} memory in use"),
    "allocated_gib": re.compile(
        rf"Of the allocated memory {_SZ} is allocated by PyTorch|{_SZ} already allocated"
    ),
    "reserved_gib": re.compile(rf"{_SZ} reserved in total by PyTorch"),
    "unallocated": re.compile(rf"and {_SZ} is reserved by PyTorch but unallocated"),
}
_OOM_GPU = re.compile(r"\bGPU (\d+)\b")
_OOM_DEVICE = re.compile(r"\b(CUDA|HIP|XPU|NPU|MUSA|MPS)(?: backend)? out of memory", re.IGNORECASE)
# MPS prints sizes with decimal-looking units that are binary (format_size in MPSAllocator).
_MPS = re.compile(rf"MPS allocated: {_SZ}, other allocations: {_SZ}, max allowed: {_SZ}")
# Out-of-memory messages without sizes (driver calls, NCCL, cuBLAS, XLA).
# A bare "out of memory" in prose ("to avoid running out of memory, ...") is not one.
_OOM_OTHER = re.compile(
    r"Tried to allocate|OutOfMemoryError: |CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED"
    r"|NCCL.{0,80}out of memory|RESOURCE_EXHAUSTED: Out of memory"
    r"|\b(?:CUDA|HIP|XPU|NPU|MUSA|MPS)(?: backend)? out of memory"
)
_OOM_DONE = ("reserved by PyTorch", "reserved in total by PyTorch", "max allowed:")
# Cheap tests before the regexes: a line without any of these holds no OOM.
_OOM_WORDS = ("emory", "OutOfMemory", "ALLOC_FAILED", "oom", "OOM", "exitcode")
_HOST_OOM = re.compile(
    r"Out of memory: Killed process|oom[-_]kill(?:ed)? |\boom_kill event|exitcode\s*:\s*-9\b"
    r"|OOM Killer|killed by the OOM killer", re.IGNORECASE
)
_NAN = re.compile(
    r"\b(?:found|detected|encountered|got)\s+(?:a\s+)?(?:nan|inf)\b"
    r"|\bloss (?:is|=|became|was) ?(?:nan|inf)\b|\bnan (?:or inf )?(?:loss|detected)\b"
    r"|non-finite (?:loss|values?)|unexpected result (?:nan|inf)|returned (?:nan|inf) values",
    re.IGNORECASE,
)
# Words every NaN message above has: lines without one skip the regex (Megatron prints
# "number of nan iterations: 0" on every line).
_NAN_WORDS = ("found", "Found", "detected", "Detected", "encountered", "got ", "oss is", "oss =",
              "became", "oss was", "NaN loss", "nan loss", "NaN or Inf", "nan or inf", "non-finite",
              "Non-finite", "esult nan", "esult inf", "eturned nan", "eturned inf")
_ITERATION = re.compile(r"\b(?:iteration|step|iter)[ :=]+(\d+)", re.IGNORECASE)
_MIN_SCALE = re.compile(
    r"loss scale already at minimum|minimum loss scale reached|loss scale.{0,40}below the minimum",
    re.IGNORECASE,
)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(
    r"([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure))(?::\s?(.*))?$"
)
_MAX_MESSAGE = 400


@dataclass
class CrashScanner:
    """Reads log lines and returns crash events as it recognises them."""

    _held: list[str] = field(default_factory=list)  # an OOM message still being wrapped
    _in_traceback: bool = False

    @property
    def holding(self) -> bool:
        """True while a wrapped OOM message waits for its continuation lines."""
        return bool(self._held)

    def feed(self, line: str) -> list[RunEvent]:
        """Events completed by ``line`` (most lines: none)."""
        events: list[RunEvent] = []
        if self._held:
            if _continues(line):
                self._held.append(line.strip())
                if _oom_done(" ".join(self._held)) or len(self._held) > 5:
                    events.append(self._release())
                return events
            events.append(self._release())
        events.extend(self._scan(line))
        return events

    def flush(self) -> list[RunEvent]:
        """Events still held when the log ends."""
        return [self._release()] if self._held else []

    def _scan(self, line: str) -> list[RunEvent]:
        if any(map(line.__contains__, _OOM_WORDS)):
            event = self._oom(line)
            if event is not None or self._held:
                self._in_traceback = False
                return [event] if event is not None else []
        events = []
        if any(map(line.__contains__, _NAN_WORDS)) and _NAN.search(line):
            events.append(_nan_event(line))
        if ("scale" in line) and _MIN_SCALE.search(line):
            events.append(RunEvent("loss_scale", None, _trim(line), {"scale": "minimum"}))
        events.extend(self._traceback(line))
        return events

    def _oom(self, line: str) -> RunEvent | None:
        if _HOST_OOM.search(line):
            return RunEvent("exception", None, _trim(line), {"type": "HostOutOfMemory"})
        if not _OOM_OTHER.search(line):
            return None
        wrapped = "Tried to allocate" in line or line.rstrip().endswith("memory.")
        if wrapped and not _oom_done(line):
            self._held = [line.strip()]  # the sizes follow, on this line's continuation
            return None
        return oom_event(line)

    def _release(self) -> RunEvent:
        text, self._held = " ".join(self._held), []
        return oom_event(text)

    def _traceback(self, line: str) -> list[RunEvent]:
        if _TRACEBACK in line:
            self._in_traceback = True
            return []
        if not self._in_traceback or line[:1].isspace():
            return []
        match = _EXCEPTION.match(line.strip())
        if match is None:
            return []
        self._in_traceback = False
        kind, message = match.group(1), match.group(2) or ""
        if "OutOfMemory" in kind or "out of memory" in message:
            return []  # already recorded as an OOM
        return [RunEvent("exception", None, _trim(f"{kind}: {message}" if message else kind),
                         {"type": kind.rsplit(".", 1)[-1]})]


def oom_event(text: str) -> RunEvent:
    """An ``oom`` event with every size the message states, in GiB."""
    data: dict = {}
    for name, pattern in _OOM_FACTS.items():
        match = pattern.search(text)
        if match is not None:
            value, unit = next((v, u) for v, u in zip(match.groups()[::2], match.groups()[1::2],
                                                      strict=True) if v)
            data[name] = to_gib(float(value), "b" if unit == "bytes" else unit)
    if "unallocated" in data:
        data["reserved_gib"] = data.get("allocated_gib", 0.0) + data.pop("unallocated")
    gpu = _OOM_GPU.search(text)
    if gpu is not None:
        data["gpu"] = int(gpu.group(1))
    device = _OOM_DEVICE.search(text)
    data["device"] = device.group(1).lower() if device else "cuda"
    mps = _MPS.search(text)
    if mps is not None:
        pairs = zip(mps.groups()[::2], mps.groups()[1::2], strict=True)
        sizes = [float(value) * _binary(unit) for value, unit in pairs]
        data.update(allocated_gib=sizes[0], capacity_gib=sizes[2])
    return RunEvent("oom", None, _trim(text), data)


def _binary(unit: str) -> float:
    return {"bytes": 1 / 1024**3, "KB": 1 / 1024**2, "MB": 1 / 1024, "GB": 1.0}.get(unit, 1.0)


def _oom_done(text: str) -> bool:
    return any(marker in text for marker in _OOM_DONE)


def _continues(line: str) -> bool:
    """A wrapped OOM message goes on in plain words, not with a new log record."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("[", "Traceback", "File ")):
        return False
    return ":" not in stripped[:20]


def _nan_event(line: str) -> RunEvent:
    data = {}
    iteration = _ITERATION.search(line)
    if iteration is not None:
        data["iteration"] = int(iteration.group(1))
    return RunEvent("nan", None, _trim(line), data)


def _trim(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
