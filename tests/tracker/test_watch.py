"""Following live runs: what a look at watched places reports, and the run status a log states."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

from tracker.ingest import ingest
from tracker.watch import FolderWatch, unit_for


def header(name: str) -> str:
    return json.dumps({"headroom": 1, "run": {"name": name}}) + "\n"


def step(n: int) -> str:
    return json.dumps({"step": n, "loss": 3 - n / 100, "wall_time": 1.7e9 + n}) + "\n"


def append(path, *lines: str) -> None:
    with path.open("a") as f:
        f.writelines(lines)


def touch_later(path, seconds: int = 5) -> None:
    """Make a change visible to a (size, mtime) look even when the size stays the same."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))


def test_first_look_reads_the_place_whole_then_only_what_changed(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_text(header("a") + step(1))
    (tmp_path / "notes.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    watch = FolderWatch()
    assert watch.look([tmp_path]).units == [tmp_path]
    assert watch.look([tmp_path]).units == []
    append(log, step(2))
    (tmp_path / "notes.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(99))  # no reader's
    changes = watch.look([tmp_path])
    assert changes.units == [log]
    assert changes.files == [log] and tmp_path in changes.folders


def test_a_file_in_a_claimed_run_folder_maps_to_the_folder(tmp_path):
    run = tmp_path / "jobs" / "run1"
    run.mkdir(parents=True)
    watch = FolderWatch()
    watch.look([tmp_path])
    (run / "headroom.jsonl").write_text(header("run1") + step(1))
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x.jsonl").write_text(header("hidden") + step(1))
    assert watch.look([tmp_path]).units == [run]
    assert unit_for(run / "headroom.jsonl", tmp_path) == run
    assert unit_for(tmp_path / "jobs" / "other.bin", tmp_path) is None


def test_a_watched_file_grows_and_a_gone_place_is_reported_once(tmp_path):
    log = tmp_path / "solo.jsonl"
    log.write_text(header("solo") + step(1))
    folder = tmp_path / "runs"
    folder.mkdir()
    watch = FolderWatch()
    assert watch.look([log, folder]).units == [log, folder]
    touch_later(log)
    folder.rmdir()
    changes = watch.look([log, folder])
    assert changes.units == [log] and changes.missing == [folder]
    assert watch.look([log, folder]).missing == [] and watch.gone == {folder}
    folder.mkdir()
    assert watch.look([log, folder]).units == [folder] and not watch.gone


def test_a_tree_over_the_file_limit_is_said_to_be_cut(tmp_path):
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text("x")
    assert FolderWatch(max_files=3).look([tmp_path]).truncated == [tmp_path]
    assert FolderWatch().look([tmp_path]).truncated == []


def test_run_status_and_last_data_follow_the_log(backend_store, tmp_path):
    log = tmp_path / "live.jsonl"
    log.write_text(header("live") + step(1) + step(2))
    first = ingest(backend_store, [log]).results[0]
    run = backend_store.run(first.run_id)
    assert run.status == "running"  # a recorder's log ends with a summary record
    assert run.last_data_at == datetime.fromtimestamp(log.stat().st_mtime, UTC)
    written = run.last_data_at
    append(log, step(3))
    touch_later(log, 60)
    assert ingest(backend_store, [log]).results[0].status == "updated"
    run = backend_store.run(first.run_id)
    assert (run.last_data_at - written).total_seconds() >= 60
    append(log, json.dumps({"step": 3, "summary": {"train_runtime": 12.5}}) + "\n")
    touch_later(log, 120)
    ingest(backend_store, [log])
    run = backend_store.run(first.run_id)
    assert run.status == "finished"
    assert run.last_data_at < datetime.fromtimestamp(log.stat().st_mtime, UTC)  # no new points


def test_an_exception_event_or_failed_exit_is_a_crash(store, tmp_path):
    log = tmp_path / "boom.jsonl"
    event = {"step": 2, "event": {"kind": "exception", "message": "RuntimeError: boom"}}
    log.write_text(header("boom") + step(1) + json.dumps(event) + "\n")
    assert store.run(ingest(store, [log]).results[0].run_id).status == "crashed"


def test_a_header_alone_is_a_run_starting(store, tmp_path):
    log = tmp_path / "loading.jsonl"
    log.write_text(header("loading"))
    run = store.run(ingest(store, [log]).results[0].run_id)
    assert run.status == "running" and run.last_data_at is not None
