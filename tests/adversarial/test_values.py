"""Values that used to be mangled silently: steps past int64, one bad cell, odd headers."""

from __future__ import annotations

import json

import pytest

from tracker.ingest import ingest

BIG = 2**63


@pytest.mark.parametrize("name, text, line", [
    ("metrics.jsonl", "".join(json.dumps({"step": s, "loss": 1.0}) + "\n"
                              for s in (1, 2, BIG, BIG + 1, 2**64)), 3),
    ("metrics.csv", "step,loss\n" + "".join(f"{s},1.0\n" for s in (1, 2, BIG, BIG + 1, 2**64)), 4),
    ("headroom.jsonl", '{"headroom": 1, "run": {"name": "big"}}\n'
     + "".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (1, BIG + 5)), 3),
])
def test_a_step_past_int64_is_an_error_naming_its_line(tmp_path, store, name, text, line, no_tracebacks):
    """Steps past 2**63 were stored as -9223372036854775808: five steps became one."""
    path = tmp_path / name
    path.write_text(text)

    [result] = ingest(store, [path]).results

    assert result.status == "error"
    assert result.reason.startswith(f"line {line}: step ")
    assert "outside the 64-bit range" in result.reason
    assert store.run_count() == 0


def test_steps_near_the_int64_limit_are_kept_exactly(tmp_path, store):
    steps = [2**62, 2**62 + 1, 2**62 + 2, BIG - 1]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in steps))

    [result] = ingest(store, [path]).results

    assert result.status == "ingested"
    assert store.series(result.run_id, "loss").steps.tolist() == steps


def test_one_non_numeric_cell_is_one_missing_point_counted_in_the_report(tmp_path, store):
    """One ``oops`` in a CSV column once dropped the whole column."""
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,acc\n1,2.0,0.5\n2,oops,0.6\n3,1.0,0.7\n4,0.5,n/a?\n")

    [result] = ingest(store, [path]).results

    assert result.status == "ingested"
    loss = store.series(result.run_id, "loss")
    assert (loss.steps.tolist(), loss.values.tolist()) == ([1, 3, 4], [2.0, 1.0, 0.5])
    assert store.series(result.run_id, "acc").steps.tolist() == [1, 2, 3]
    assert "loss: 1 non-numeric cell(s) taken as missing (first on line 3)" in result.warnings
    assert "acc: 1 non-numeric cell(s) taken as missing (first on line 5)" in result.warnings


def test_a_text_column_stays_out_without_a_warning(tmp_path, store):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,phase\n1,2.0,train\n2,1.0,eval\n")

    [result] = ingest(store, [path]).results

    assert result.status == "ingested" and result.warnings == []


def test_invalid_utf8_in_a_csv_header(tmp_path, store, no_tracebacks):
    path = tmp_path / "metrics.csv"
    path.write_bytes(b"step,lo\xffss,acc\n1,2.0,0.5\n2,1.0,0.6\n")

    [result] = ingest(store, [path]).results

    assert result.status == "ingested", result.reason
    assert set(store.series_infos(result.run_id)) == {"lo\ufffdss", "acc"}


def test_a_csv_with_a_hundred_thousand_columns_gets_a_reason_not_unrecognised(tmp_path, store):
    path = tmp_path / "metrics.csv"
    header = "step," + ",".join(f"m{i}" for i in range(100_000))
    path.write_text(header + "\n" + "\n".join(f"{s}," + ",".join(["1.0"] * 100_000)
                                              for s in (1, 2)) + "\n")

    [result] = ingest(store, [path]).results

    assert "unrecognised" not in result.reason
    assert result.status == "error"
    assert result.reason == "100,001 columns: more than the 10,000 a log table may have"
