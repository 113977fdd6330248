"""Headroom's own JSONL: record lines (checkpoints, events, summary) among a run's metric rows."""

from __future__ import annotations

import json

import pytest

from tracker.readers import headroom_jsonl


def write(path, lines: list[dict], tail: str = "") -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)


HEADER = {"headroom": 1, "run": {"name": "r", "config": {"summary": "words", "event": 1}}}


def test_records_are_taken_out_of_the_rows_wherever_they_are(tmp_path):
    path = tmp_path / "headroom.jsonl"
    rows = [{"step": s, "loss": 1.0 / s} for s in range(1, 7)]
    write(path, [HEADER, *rows[:2], {"step": 2, "checkpoint": {"path": "ckpt-2", "metrics": {"eval_loss": 0.7}}},
                 *rows[2:4], {"step": 4, "event": {"kind": "oom", "message": "out of memory"}},
                 *rows[4:], {"step": 6, "summary": {"train_runtime": 12.5}}])
    run = headroom_jsonl.read(path)
    assert run.series["loss"].steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert run.series["loss"].values[-1] == pytest.approx(1 / 6)
    assert [(c.step, c.path, c.metrics) for c in run.checkpoints] == [(2, "ckpt-2", {"eval_loss": 0.7})]
    assert [(e.kind, e.step) for e in run.events] == [("oom", 4)]
    assert run.summary == {"train_runtime": 12.5} and run.status == "finished"
    assert run.config == {"summary": "words", "event": 1}  # keys in the header are not records


def test_a_half_written_last_record_is_left_for_the_next_ingest(tmp_path):
    path = tmp_path / "headroom.jsonl"
    write(path, [HEADER, {"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}],
          tail='{"step": 2, "checkpoint": {"path": "ck')
    run = headroom_jsonl.read(path)
    assert run.series["loss"].steps.tolist() == [1, 2]
    assert run.checkpoints == [] and run.status == "running"


def test_a_broken_record_line_mid_file_is_named(tmp_path):
    path = tmp_path / "headroom.jsonl"
    write(path, [HEADER, {"step": 1, "loss": 2.0}], tail='{"step": 1, "event": {"kind": \n'
          + json.dumps({"step": 2, "loss": 1.5}) + "\n")
    with pytest.raises(headroom_jsonl.ReaderError, match="line 3"):
        headroom_jsonl.read(path)
