"""Files that are not what their names say: FIFOs, symlink loops, undecodable names, empty
event files, huge records. Each is skipped or reported on its own; the run goes on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.adversarial.conftest import cli, cli_code, headroom_log, isolated, plain_checkpoint
from tracker.ingest import ingest


def test_fifos_named_like_checkpoints_are_skipped_not_opened(tmp_path):
    """A FIFO named ``ckpt.pt`` (or inside ``checkpoint-10/``) blocked ingest forever."""
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [10])
    os.mkfifo(run / "ckpt.pt")
    (run / "checkpoint-10").mkdir()
    os.mkfifo(run / "checkpoint-10" / "model.safetensors")
    os.mkfifo(run / "checkpoint-10" / "trainer_state.json")
    db = str(tmp_path / "h.db")

    done = isolated(cli_code("ingest", str(run), str(run / "ckpt.pt"), "--db", db, "--json"))

    files = {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}
    assert files["run"]["status"] == "ingested"
    assert files["ckpt.pt"]["status"] == "error"
    assert files["ckpt.pt"]["reason"] == "not a regular file (a FIFO): skipped"
    from tracker.store import Store

    found = {Path(c.path).name: c for c in Store(db).checkpoints(1)}
    assert found["ckpt.pt"].status == "unreadable"
    assert "ckpt.pt: not a regular file (a FIFO): skipped" in found["ckpt.pt"].warnings
    assert any("FIFO" in w for w in found["checkpoint-10"].warnings)


def test_a_self_symlink_checkpoint_is_one_warning(tmp_path, store, capsys, no_tracebacks):
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1, 2])
    plain_checkpoint(run / "step_2.pt", 2)
    (run / "x.pt").symlink_to("x.pt")

    report = ingest(store, [run])

    assert report.ok, report.to_dict()
    code, out, err = cli(capsys, "checkpoints", "1", "--db", store.url, "--json")
    assert code == 0, err
    found = {Path(c["path"]).name: c for c in json.loads(out)["checkpoints"]}
    assert found["step_2.pt"]["status"] == "ok"
    assert found["x.pt"]["status"] == "unreadable"
    assert any("symlink loop" in w for w in found["x.pt"]["warnings"])


def test_a_checkpoint_name_that_is_not_utf8(tmp_path, store, capsys, no_tracebacks):
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1, 2])
    plain_checkpoint(run / "step_2.pt", 2)
    with open(os.path.join(os.fsencode(run), b"step_1\xff.pt"), "wb") as f:
        f.write(b"\x80\x02}.")

    report = ingest(store, [run])

    assert report.ok, report.to_dict()
    for text in (False, True):
        code, out, err = cli(capsys, "checkpoints", "1", "--db", store.url,
                             *([] if text else ["--json"]))
        assert code == 0, err
    code, out, _ = cli(capsys, "checkpoints", "1", "--db", store.url, "--json")
    found = {Path(c["path"]).name: c for c in json.loads(out)["checkpoints"]}
    odd = found["step_1\\xff.pt"]
    assert odd["status"] == "unreadable" and "not valid UTF-8" in odd["warnings"][0]


def test_an_empty_event_file_beside_a_good_one_is_skipped_with_a_note(tmp_path, store, no_tracebacks):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    from tracker.readers._tfrecord import frame

    tb = tmp_path / "tb"
    tb.mkdir()
    events = [Event(wall_time=1.7e9, step=s, summary=Summary(value=[
        Summary.Value(tag="loss", simple_value=1.0 / s)])) for s in (1, 2, 3)]
    (tb / "events.out.tfevents.1700000000.host").write_bytes(
        b"".join(frame(e.SerializeToString()) for e in events))
    (tb / "events.out.tfevents.1700000100.host").write_bytes(b"")

    report = ingest(store, [tb])

    assert report.ok, report.to_dict()
    [result] = report.results
    assert "events.out.tfevents.1700000100.host: empty event file, skipped" in result.warnings
    assert store.series(result.run_id, "loss").steps.tolist() == [1, 2, 3]


@pytest.mark.timeout(10)
def test_one_eight_megabyte_tensorboard_record_is_read_in_time(tmp_path, store, no_tracebacks):
    """Its checksum took ~37 s when computed a byte column at a time in Python."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    from tracker.readers._tfrecord import frame

    big = Event(wall_time=1.7e9, step=1, summary=Summary(value=[
        Summary.Value(tag="loss", simple_value=2.0),
        Summary.Value(tag="blob", metadata={"plugin_data": {"plugin_name": "other"}},
                      tensor={"dtype": 7, "string_val": [b"x" * (8 << 20)]})]))
    small = Event(wall_time=1.7e9, step=2, summary=Summary(value=[
        Summary.Value(tag="loss", simple_value=1.0)]))
    path = tmp_path / "events.out.tfevents.1700000000.host"
    path.write_bytes(frame(big.SerializeToString()) + frame(small.SerializeToString()))

    report = ingest(store, [path])

    assert report.ok, report.to_dict()
    assert store.series(report.results[0].run_id, "loss").values.tolist() == [2.0, 1.0]


def test_a_damaged_big_record_is_still_caught(tmp_path, store):
    from tracker.readers._tfrecord import frame

    data = bytearray(frame(b"\x08" * (8 << 20)))
    data[5000] ^= 0xFF
    path = tmp_path / "events.out.tfevents.1700000000.host"
    path.write_bytes(bytes(data))

    [result] = ingest(store, [path]).results

    assert result.status == "error"
    assert result.reason.endswith("record 1 at byte 0: damaged record (checksum mismatch)")
