"""Crash evidence: OOMs (each PyTorch format, wrapped or not), NaN/Inf, loss-scale floor, tracebacks."""

from __future__ import annotations

import pytest

from tests.tracker.readers.test_console_lines import iteration
from tracker.ingest import ingest
from tracker.readers.crash import CrashScanner
from tracker.readers.text.megatron import read_runs

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
       "of 79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB "
       "memory in use. Of the allocated memory 75.10 GiB is allocated by PyTorch, and 1.30 GiB is reserved "
       "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
OLD_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
           "14.56 GiB already allocated; 3.44 MiB free; 14.60 GiB reserved in total by PyTorch) If reserved "
           "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.")


def scan(*lines: str):
    scanner = CrashScanner()
    events = [e for line in lines for e in scanner.feed(line)]
    return events + scanner.flush()


def test_current_pytorch_oom_message_sizes():
    [event] = scan(OOM)
    assert event.kind == "oom"
    assert event.data == {"tried_gib": 2.0, "capacity_gib": 79.15, "free_gib": 1.2, "in_use_gib": 77.93,
                          "allocated_gib": pytest.approx(75.1), "reserved_gib": pytest.approx(76.4), "gpu": 3, "device": "cuda"}


def test_pre_2_1_oom_message_sizes():
    [event] = scan(OLD_OOM)
    assert event.data == {"tried_gib": pytest.approx(20 / 1024), "capacity_gib": 15.78,
                          "free_gib": pytest.approx(3.44 / 1024, abs=1e-4), "allocated_gib": 14.56,
                          "reserved_gib": 14.6, "gpu": 0, "device": "cuda"}


def test_oom_message_wrapped_over_lines():
    """A terminal or a logger breaks the message; the pieces are read as one."""
    wrapped = ["torch.cuda.OutOfMemoryError: CUDA out of memory.",
               "Tried to allocate 14.06 GiB. GPU 0 has a total capacity of 79.15 GiB",
               "of which 0.87 GiB is free. Process 1 has 78.28 GiB memory in use.",
               "Of the allocated memory 73.91 GiB is allocated by PyTorch, and 4.37 GiB",
               "is reserved by PyTorch but unallocated.", "[FATAL] container exited with code 1."]
    events = scan(*wrapped)
    assert [e.kind for e in events] == ["oom"]
    assert events[0].data["reserved_gib"] == pytest.approx(78.28) and events[0].data["tried_gib"] == 14.06


def test_other_devices_and_allocators():
    [mps] = scan("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: "
                 "1.20 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.")
    assert mps.data["device"] == "mps" and mps.data["capacity_gib"] == pytest.approx(18.13)
    [hip] = scan("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
                 "capacity of 191.98 GiB of which 0 bytes is free. Of the allocated memory 180.00 GiB is allocated "
                 "by PyTorch, and 2.00 GiB is reserved by PyTorch but unallocated.")
    assert hip.data["device"] == "hip" and hip.data["free_gib"] == 0
    assert [e.kind for e in scan("RuntimeError: CUDA error: out of memory")] == ["oom"]
    assert [e.kind for e in scan("NCCL WARN Cuda failure 'out of memory'")] == ["oom"]


def test_prose_about_memory_is_not_an_oom():
    assert scan("[WARNING:swift] The cross_entropy loss function ... increased GPU memory consumption.",
                "Tip: to avoid running out of memory, lower the batch size.",
                "except torch.cuda.OutOfMemoryError:") == []


def test_host_oom_killer_is_an_exception_not_a_gpu_oom():
    [event] = scan("torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0")
    assert (event.kind, event.data["type"]) == ("exception", "HostOutOfMemory")
    [event] = scan("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0.")
    assert event.data["type"] == "HostOutOfMemory"


def test_nan_messages():
    [nan] = scan("RuntimeError: Rank 255, node n1, device 7, iteration 2: Unexpected result nan "
                 "(message='found NaN in local forward loss calculation')")[:1]
    assert (nan.kind, nan.data["iteration"]) == ("nan", 2)
    assert [e.kind for e in scan("Loss is nan, stopping training")] == ["nan"]
    assert scan(iteration(5)) == []  # "number of nan iterations: 0" is a counter, not a NaN


def test_loss_scale_floor():
    [event] = scan("Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
    assert event.kind == "loss_scale"
    assert [e.kind for e in scan("FloatingPointError: Minimum loss scale reached (0.0001).")] == ["loss_scale"]


def test_traceback_ends_in_an_exception():
    events = scan("Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                  "    main()", "KeyError: 'input_ids'")
    assert [(e.kind, e.data["type"]) for e in events] == [("exception", "KeyError")]
    events = scan("Traceback (most recent call last):", '  File "train.py", line 9', OOM)
    assert [e.kind for e in events] == ["oom"]  # the OOM, once, not also as an exception


def test_oom_in_a_console_log_is_an_event_at_the_last_step_and_marks_the_run_crashed(store, tmp_path):
    """Every rank prints its OOM; each GPU's is kept once, at the step the run had reached."""
    ranks = [f"[rank{r}]: " + OOM.replace("GPU 3", f"GPU {r}") for r in (0, 1, 0, 1)]
    path = tmp_path / "pretrain.log"
    path.write_text("\n".join([iteration(1), iteration(2), "[rank0]: Traceback (most recent call last):", *ranks])
                    + "\n")
    run = read_runs(path)[0]
    ooms = [e for e in run.events if e.kind == "oom"]
    assert [(e.step, e.data["gpu"]) for e in ooms] == [(2, 0), (2, 1)]
    report = ingest(store, [path])
    assert store.run(report.results[0].run_id).status == "crashed"


def test_oom_before_the_first_step_has_no_step(tmp_path):
    path = tmp_path / "pretrain.log"
    path.write_text("------------------------ arguments ------------------------\n"
                    "  num_layers ...................................... 80\n"
                    "-------------------- end of arguments ---------------------\n" + OOM + "\n")
    [run] = read_runs(path)
    assert [(e.kind, e.step) for e in run.events] == [("oom", None)]
    assert run.shape.n_layers == 80  # the shape that did not fit
