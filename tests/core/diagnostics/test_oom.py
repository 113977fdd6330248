"""Out of memory at the start and mid-run, from OOM events as the log readers record them
(PyTorch's own message, parsed by the crash scanner) and as the recorders record them."""

from __future__ import annotations

import numpy as np
import pytest

from core.diagnostics import RunData
from core.runlog import RunEvent
from core.shape import RunShape
from tests.core.diagnostics.runs import kinds, only, series

MESSAGE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried} GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process "
    "has 77.94 GiB memory in use. Of the allocated memory {allocated} GiB is allocated by PyTorch, "
    "and {cached} GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
    "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)


def oom(step: int | None, tried: float = 1.96, allocated: float = 75.10,
        cached: float = 1.33) -> RunEvent:
    from tracker.readers.crash import oom_event

    event = oom_event(MESSAGE.format(tried=tried, allocated=allocated, cached=cached))
    event.step = step
    return event


def trained(steps: int) -> dict:
    return series(loss=(np.arange(1, steps + 1), np.linspace(3.0, 2.0, steps)))


def test_oom_before_any_step_is_static_memory_and_points_to_the_sizing():
    shape = RunShape(model="meta-llama/Llama-3.1-8B", method="full", precision="mixed-bf16",
                     micro_batch=4)
    found = only(RunData(events=[oom(None)], shape=shape), "oom_start")
    assert found.severity == "critical" and found.step_start is None
    assert found.evidence["tried_gib"] == pytest.approx(1.96)
    assert found.evidence["capacity_gib"] == pytest.approx(79.15)
    assert found.evidence["shape"]["model"] == "meta-llama/Llama-3.1-8B"
    assert not found.evidence["fragmented"]
    assert "LoRA" in found.remedy and "Size the next run" in found.remedy
    assert "tried to allocate 1.96 GiB on a 79.2 GiB GPU" in found.message


def test_oom_at_the_first_steps_is_still_at_start():
    assert kinds(RunData(series=trained(2), events=[oom(2)])) == ["oom_start"]


def test_oom_after_many_good_steps_is_an_activation_peak():
    found = only(RunData(series=trained(500), events=[oom(480)]), "oom_mid")
    assert found.evidence["logged_steps_before"] == 479 and found.marks == (480,)
    assert "recomputation" in found.remedy and "expandable_segments" not in found.remedy


def test_an_oom_with_a_step_unknown_ended_the_run_after_its_last_logged_step():
    assert kinds(RunData(series=trained(300), events=[oom(None)])) == ["oom_mid"]


def test_reserved_but_unallocated_memory_larger_than_the_request_is_fragmentation():
    event = oom(400, tried=2.0, allocated=60.2, cached=16.5)
    found = only(RunData(series=trained(500), events=[event]), "oom_mid")
    assert found.evidence["fragmented"]
    assert found.evidence["reserved_unallocated_gib"] == pytest.approx(16.5)
    assert found.remedy.startswith("Memory was fragmented: set PYTORCH_CUDA_ALLOC_CONF=")


def test_an_oom_at_an_evaluation_step_says_so():
    run = RunData(series={**trained(500), **series(eval_loss=([100, 200, 300], [2.5, 2.4, 2.3]))},
                  events=[oom(300)])
    assert "during evaluation" in only(run, "oom_mid").message


def test_the_host_running_out_of_memory_is_its_own_finding():
    killed = RunEvent("exception", None, "Out of memory: Killed process 4242 (python)",
                      {"type": "HostOutOfMemory"})
    found = only(RunData(series=trained(50), events=[killed]), "oom_host")
    assert "CPU RAM" in found.cause and "memory_tight" not in kinds(RunData(events=[killed]))


def test_one_oom_finding_however_many_ranks_printed_it():
    found = only(RunData(series=trained(500), events=[oom(480) for _ in range(8)]), "oom_mid")
    assert found.evidence["oom_messages"] == 8


def test_the_recorders_oom_events_carry_the_peaks_at_the_crash():
    # tracker.record writes the exception's type and the allocator's peaks when a run dies.
    crash = RunEvent("oom", 120, "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                     {"error": "OutOfMemoryError", "mem_peak_gib": 30.1, "mem_reserved_gib": 44.0})
    found = only(RunData(series=trained(200), events=[crash]), "oom_mid")
    assert found.evidence["allocated_gib"] == 30.1 and found.evidence["reserved_gib"] == 44.0
    host = RunEvent("oom", 120, "MemoryError", {"error": "MemoryError"})
    assert kinds(RunData(series=trained(200), events=[host])) == ["oom_host"]
