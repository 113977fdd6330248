"""Recorder in plain loops: real PyTorch training on the CPU, crashes, kills, resumes, ranks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tracker.ingest import ingest
from tracker.record import Recorder

STEPS, EVERY, BATCH, SEQ = 20, 5, 4, 16


def train_loop(
    path: Path, steps: int = STEPS, fail: BaseException | None = None, fail_at: int = 7, **options
) -> None:
    """A tiny embedding + linear language model trained with AdamW, recorded every EVERY steps."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(64, 32), torch.nn.Linear(32, 64))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with Recorder(
        path, model=model, optimizer=optimizer, every=EVERY, config={"seed": 0}, **options
    ) as rec:
        for step in range(1, steps + 1):
            if fail is not None and step == fail_at:
                raise fail
            x = torch.randint(0, 64, (BATCH, SEQ))
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            rec.step(step, loss=loss, batch=x)
            if step == 10:
                rec.evaluate(step, eval_loss=loss.item(), eval_accuracy=0.5)
                rec.checkpoint(step, path.parent / "ckpt-10", eval_loss=loss.item())


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_plain_loop_ingests_with_every_field(store, tmp_path):
    path = tmp_path / "run" / "headroom.jsonl"
    train_loop(path)
    report = ingest(store, [path.parent])
    assert [r.status for r in report.results] == ["ingested"], report.results
    run = store.run(report.results[0].run_id)
    assert run.format == "headroom_jsonl" and run.status == "finished" and run.name == "run"
    expected = {
        "loss",
        "lr",
        "eval_loss",
        "eval/accuracy",
        "step_time_s",
        "samples_per_s",
        "tokens_per_s",
        "samples_seen",
        "tokens_seen",
        "batch_size",
    }
    assert expected <= set(run.series), sorted(run.series)
    assert run.series["loss"].count == STEPS // EVERY and run.series["loss"].first_step == EVERY
    assert store.series(run.id, "tokens_seen").values.tolist() == [
        s * BATCH * SEQ for s in range(EVERY, STEPS + 1, EVERY)
    ]
    assert set(store.series(run.id, "batch_size").values) == {BATCH}
    assert store.series(run.id, "lr").values[-1] == pytest.approx(1e-3)
    # No GPU here: memory fields are absent, not zero.
    assert not {"mem_peak_gib", "mem_reserved_gib"} & set(run.series)
    n_params = 64 * 32 + 32 * 64 + 64
    shape = run.shape
    assert (shape.n_params, shape.n_trainable_params, shape.method) == (n_params, n_params, "full")
    assert (shape.optimizer, shape.precision, shape.micro_batch, shape.seq_len) == (
        "adamw",
        "fp32",
        BATCH,
        SEQ,
    )
    assert shape.framework == "pytorch" and shape.sources["seq_len"] == "headroom header"
    config = store.details(run.id).config
    assert config["seed"] == 0 and config["recorder"]["by"] == "Recorder"
    ckpt = _record(path, "checkpoint")
    assert ckpt["checkpoint"]["path"] == "ckpt-10" and ckpt["step"] == 10
    summary = lines(path)[-1]["summary"]
    assert summary["steps"] == STEPS and summary["tokens_seen"] == STEPS * BATCH * SEQ


def _record(path: Path, kind: str) -> dict:
    return next(line for line in lines(path) if kind in line)


def test_an_exception_is_the_final_event_and_is_re_raised(store, tmp_path):
    path = tmp_path / "boom.jsonl"
    with pytest.raises(ValueError, match="boom"):
        train_loop(path, fail=ValueError("boom"))
    last = lines(path)[-1]
    assert last["step"] == 6 and last["event"]["kind"] == "exception"
    assert (
        last["event"]["message"] == "ValueError: boom"
        and "train_loop" in last["event"]["traceback"]
    )
    run = store.run(ingest(store, [path]).results[0].run_id)
    assert run.status == "crashed"
    assert [e.kind for e in store.events(run.id)] == ["exception"]


def test_an_oom_is_recorded_as_kind_oom(store, tmp_path):
    import torch

    path = tmp_path / "oom.jsonl"
    error = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    with pytest.raises(torch.OutOfMemoryError):
        train_loop(path, fail=error, fail_at=12)
    run_id = ingest(store, [path]).results[0].run_id
    [event] = store.events(run_id)
    assert (event.kind, event.step, event.data["error"]) == ("oom", 11, "OutOfMemoryError")
    assert "Tried to allocate 2.00 GiB" in event.message
    assert store.run(run_id).series["loss"].last_step == 10  # the records before it are kept


def test_a_killed_run_leaves_a_file_that_ingests(store, tmp_path):
    """SIGKILL mid-run: no summary, no event, but every flushed record is there."""
    path = tmp_path / "killed" / "headroom.jsonl"
    script = textwrap.dedent(f"""
        import time
        from tracker.record import Recorder
        rec = Recorder({str(path)!r}, shape={{"seq_len": 128}})
        for step in range(1, 100000):
            rec.step(step, loss=10.0 / step, lr=1e-4, batch_samples=8, batch_tokens=1024)
            time.sleep(0.002)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not path.exists() or path.read_text().count("\n") < 30
        ):
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    whole = path.read_bytes().count(b"\n") - 1  # records, after the header
    assert whole >= 29
    report = ingest(store, [path.parent])
    assert [r.status for r in report.results] == ["ingested"], report.results
    run = store.run(report.results[0].run_id)
    assert run.status == "running" and run.shape.seq_len == 128  # no end record: stale later
    assert run.series["loss"].count in (whole, whole - 1)  # a last line cut mid-write is left out
    assert run.series["tokens_per_s"].count == run.series["loss"].count


def test_a_fresh_run_keeps_an_earlier_log_aside(tmp_path):
    path = tmp_path / "headroom.jsonl"
    train_loop(path, steps=5)
    first = path.read_text()
    with pytest.warns(RuntimeWarning, match="kept as headroom.1.jsonl"):
        train_loop(path, steps=10)
    assert (tmp_path / "headroom.1.jsonl").read_text() == first
    assert lines(path)[-1]["summary"]["steps"] == 10


def test_resume_appends_after_a_line_cut_mid_write(store, tmp_path):
    path = tmp_path / "headroom.jsonl"
    with Recorder(path, every=1) as rec:
        for step in range(1, 11):
            rec.step(step, loss=1.0 / step)
    with open(path, "a") as f:
        f.write('{"step": 11, "loss": 0.0')  # the process died here
    with Recorder(path, every=1, resume=True) as rec:
        rec.recording.start(8)  # as a loop resumed from the step-8 checkpoint would
        for step in range(9, 13):
            rec.step(step, loss=2.0 / step)
    records = lines(path)
    assert sum("headroom" in r for r in records) == 1
    resume = next(r for r in records if "event" in r)
    assert (resume["step"], resume["event"]["kind"]) == (8, "resume")
    run_id = ingest(store, [path]).results[0].run_id
    assert store.series(run_id, "loss").steps.tolist() == [*range(1, 11), *range(9, 13)]
    assert [e.kind for e in store.events(run_id)] == ["resume"]


def test_non_numeric_values_are_warned_once_and_left_out(tmp_path):
    path = tmp_path / "headroom.jsonl"
    with Recorder(path, every=1) as rec, pytest.warns(RuntimeWarning) as caught:
        for step in range(1, 4):
            rec.step(step, loss=1.0, note="warm-up", flag=True)
    messages = sorted(str(w.message) for w in caught)
    assert ["'flag' is a bool" in messages[0], "'note' is a str" in messages[1]] == [True, True]
    assert (
        len(messages) == 2 and caught[0].filename == __file__
    )  # once per key, at the caller's line
    assert all("note" not in r and "flag" not in r for r in lines(path))


def test_importing_the_recorders_imports_no_framework():
    code = (
        "import sys, tracker.record; from tracker.record import Recorder; "
        "heavy = ('torch', 'transformers', 'lightning', 'PySide6'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_ranks_gather_peaks_and_counts_and_only_rank_0_writes(tmp_path):
    """Two gloo processes: memory is the max over ranks, samples and tokens the sum."""
    path = tmp_path / "ddp" / "headroom.jsonl"
    script = textwrap.dedent(f"""
        import json, os, torch.distributed as dist
        from tracker.record import Recorder, ranks
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        print(json.dumps(ranks.combine({{"mem_peak_gib": 1.0 + rank, "mem_reserved_gib": None,
                                         "samples": 2, "tokens": 10 * (rank + 1)}})))
        with Recorder({str(path)!r}, gather=True, every=2) as rec:
            for step in range(1, 5):
                rec.step(step, loss=1.0, batch_samples=2 + rank, batch_tokens=32 * (2 + rank))
        dist.destroy_process_group()
    """)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
        )
        for r in (0, 1)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    for out in outs:
        assert json.loads(out) == {
            "mem_peak_gib": 2.0,
            "mem_reserved_gib": None,
            "samples": 4,
            "tokens": 30,
        }
    records = lines(path)
    assert records[0]["run"]["config"]["recorder"]["gathered"] is True
    assert [r["samples_seen"] for r in records[1:3]] == [
        10,
        20,
    ]  # (2 + 3) samples per step, both ranks
    assert records[2]["batch_size"] == 5 and records[2]["tokens_seen"] == 4 * (64 + 96)
    assert list(path.parent.iterdir()) == [path]
