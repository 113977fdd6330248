"""One run being recorded: the part the HF, Lightning and plain-loop recorders share.

The framework adapters feed it batches (``count``), metrics at their logging
steps (``record``), evaluations, checkpoints and the run's end; it measures
what the frameworks do not log (memory peaks, throughput, data volume) and
writes Headroom JSONL through one ``JsonlWriter``. Rank 0 writes; every rank
measures, and the ranks combine their figures at each record (``ranks``).

The header is written with the first record rather than at start, so it can
state facts only the first batches reveal (micro batch, sequence length).
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import core
from core import plan_stamp
from core.shape import RunShape
from tracker.record import device, failure, ranks
from tracker.record.facts import versions
from tracker.record.writer import JsonlWriter, warn

MEMORY_NOTE = (
    "mem_peak_gib and mem_reserved_gib are peaks since the previous record "
    "(torch's peak counters are reset after each record)"
)


class Recording:
    """Counters since the last record, the run's facts, and its log file."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None,
        framework: str,
        by: str,
        gather: bool = True,
        resume: bool = False,
    ) -> None:
        self.path = Path(path)
        self.name = name or self.path.resolve().parent.name
        self.rank, self.world = ranks.rank_and_world()
        self.gather = gather
        self.resume = resume
        self.shape: dict[str, Any] = {"framework": framework}
        self.config: dict[str, Any] = {}
        self.plan: dict[str, Any] | None = None  # the exported plan it was launched from
        self.model: Any | None = None  # where the memory is: its parameters' devices
        self.step = 0  # the last completed step: where a crash happened
        self.finished = False
        self._by = by
        self._started = datetime.now().astimezone()
        self._writer: JsonlWriter | None = None
        self._devices: list[int] | None = None
        self._interval = _Interval(time.perf_counter(), 0)
        self._totals = {"samples_seen": 0, "tokens_seen": 0}
        self._start_step = 0
        self._first_samples: int | None = None  # the micro batch, when nothing states it
        self._max_seq = 0
        self._run_peaks = {"mem_peak_gib": None, "mem_reserved_gib": None}

    def link_plan(self, *candidates: Any) -> None:
        """Name the plan this run was launched from: the first stamp among ``candidates``
        (a recorder's ``plan`` argument, a config's field), else ``$HEADROOM_PLAN``."""
        self.plan = plan_stamp.found(*candidates)

    @property
    def writes(self) -> bool:
        """Only rank 0 writes the file."""
        return self.rank == 0

    def start(self, step: int = 0, tokens_seen: int = 0) -> None:
        """Start the clock (after set-up) at ``step``, the first step of this session.

        ``tokens_seen``: a framework's own count so far, when a resumed run keeps one.
        """
        self.step = self._start_step = step
        self._totals["tokens_seen"] = tokens_seen
        self._interval = _Interval(time.perf_counter(), step)

    # Feeding

    def count(
        self, samples: int | None, tokens: int | None = None, seq_len: int | None = None
    ) -> None:
        """One micro batch consumed by this rank (called per batch: keep it cheap)."""
        interval = self._interval
        if samples:
            interval.samples += samples
        if tokens:
            interval.tokens += tokens
        if seq_len and seq_len > self._max_seq:
            self._max_seq = seq_len
        if self._first_samples is None:
            self._first_samples = samples

    def exclude(self, seconds: float) -> None:
        """Leave time spent outside training (evaluation) out of the throughput."""
        self._interval.excluded += seconds

    # Records

    def record(self, step: int, metrics: dict[str, Any], tokens_seen: int | None = None) -> None:
        """A training record at ``step``: ``metrics`` plus memory, throughput and data volume.

        Every rank must call it at the same steps when ``gather`` is on (one collective).
        ``tokens_seen`` is a framework's own global token count, used when it keeps one.
        """
        measured = self._measure(step, tokens_seen)
        self.step = step
        if self.writes:
            self._open().metrics(step, time.time(), {**metrics, **measured})

    def evaluate(self, step: int, metrics: dict[str, Any]) -> None:
        if metrics and self.writes:
            self._open().metrics(step, time.time(), metrics)

    def checkpoint(self, step: int, path: str | os.PathLike, metrics: dict[str, Any]) -> None:
        if self.writes:
            writer = self._open()
            body = {"path": self._relative(path), "metrics": writer.numbers(metrics)}
            writer.record(step, time.time(), "checkpoint", body)

    def event(self, kind: str, message: str = "", step: int | None = None, **data: Any) -> None:
        if self.writes:
            body = {"kind": kind, "message": message, **data}
            self._open().record(self.step if step is None else step, time.time(), "event", body)

    def fail(self, exc: BaseException) -> None:
        """Record ``exc`` as the run's final event (an OOM as kind "oom") and close the file."""
        if self.finished:
            return
        kind = failure.event_kind(exc)
        if kind is None:
            self.finish({})
            return
        message, data = failure.describe(exc)
        memory = device.peaks(self._devices_now(), reset=False)
        if memory is not None:
            data.update(mem_peak_gib=round(memory[0], 4), mem_reserved_gib=round(memory[1], 4))
        self.event(kind, message, **data)
        self.close()

    def finish(self, summary: dict[str, Any]) -> None:
        """The run ended normally: a summary record with its run-wide figures, then close."""
        if self.finished:
            return
        if self.writes:
            totals = {k: v for k, v in self._totals.items() if v}
            body = self._open().numbers(
                {**summary, **totals, **self._run_peaks, "steps": self.step}
            )
            self._open().record(self.step, time.time(), "summary", body)
        self.close()

    def close(self) -> None:
        self.finished = True
        if self._writer is not None:
            self._writer.close()

    # Measuring

    def _measure(self, step: int, tokens_seen: int | None) -> dict[str, Any]:
        now, interval = time.perf_counter(), self._interval
        memory = device.peaks(self._devices_now())
        local = {
            "mem_peak_gib": memory and memory[0],
            "mem_reserved_gib": memory and memory[1],
            "samples": interval.samples,
            "tokens": interval.tokens,
        }
        both = ranks.combine(local) if self.gather else local
        if tokens_seen is not None:
            both["tokens"] = max(tokens_seen - self._totals["tokens_seen"], 0)
        self._interval = _Interval(time.perf_counter(), step)
        return self._rates(
            both, step - interval.step, max(now - interval.start - interval.excluded, 1e-9)
        )

    def _rates(self, both: dict[str, Any], steps: int, seconds: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self._run_peaks:
            if both[key] is not None:
                out[key] = round(both[key], 4)
                self._run_peaks[key] = max(self._run_peaks[key] or 0.0, out[key])
        samples, tokens = both["samples"], both["tokens"]
        if steps > 0:
            out["step_time_s"] = round(seconds / steps, 6)
        if samples:
            self._totals["samples_seen"] += samples
            out.update(
                samples_per_s=round(samples / seconds, 3), samples_seen=self._totals["samples_seen"]
            )
            if steps > 0:
                out["batch_size"] = _tidy(samples / steps)
        if tokens:
            self._totals["tokens_seen"] += tokens
            out.update(
                tokens_per_s=round(tokens / seconds, 2), tokens_seen=self._totals["tokens_seen"]
            )
        return out

    def _devices_now(self) -> list[int]:
        if self._devices is None and device.cuda_ready():
            self._devices = device.devices_of(self.model)
        return self._devices or []

    # The file

    def _open(self) -> JsonlWriter:
        if self._writer is None:
            self._writer = JsonlWriter(self.path, self._header(), resume=self.resume)
            if self._writer.moved_aside is not None:
                warn(f"an earlier log at {self.path} was kept as {self._writer.moved_aside.name}")
            if self.resume:
                self._writer.record(
                    self._start_step,
                    time.time(),
                    "event",
                    {"kind": "resume", "message": f"resumed at step {self._start_step}"},
                )
        return self._writer

    def _header(self) -> dict[str, Any]:
        devices = self._devices_now()
        shape = RunShape()
        shape.update(self.shape, "recorder")
        micro = shape.micro_batch or self._first_samples
        accum = shape.grad_accum
        inferred = {
            "micro_batch": micro,
            "seq_len": self._max_seq or None,
            "global_batch": micro * accum * self.world if micro and accum else None,
            "n_gpus": self.world * len(devices) if devices else None,
            "n_nodes": ranks.node_count(),
            **device.gpu_facts(devices),
        }
        shape.update(inferred, "recorder", overwrite=False)
        recorder = {
            "by": self._by,
            "headroom": core.__version__,
            "memory": MEMORY_NOTE,
            "ranks": self.world,
            "gathered": self.gather and self.world > 1,
        }
        config = {"recorder": recorder, "versions": versions(), **self.config}
        if self.plan:
            config["plan"] = self.plan
        return {
            "name": self.name,
            "started": self._started.isoformat(timespec="seconds"),
            "shape": shape.known(),
            "config": config,
        }

    def _relative(self, path: str | os.PathLike) -> str:
        """A checkpoint path relative to the log's folder when it lies inside it."""
        target = Path(path).resolve()
        try:
            return target.relative_to(self.path.resolve().parent).as_posix()
        except ValueError:
            return str(target)


def _tidy(value: float) -> float | int:
    """Whole numbers as ints (a batch of 32 samples, not 32.0)."""
    return int(value) if float(value).is_integer() else round(value, 3)


class _Interval:
    """What happened since the last record."""

    __slots__ = ("start", "step", "samples", "tokens", "excluded")

    def __init__(self, start: float, step: int) -> None:
        self.start, self.step = start, step
        self.samples = self.tokens = 0
        self.excluded = 0.0
