"""Generic JSON-lines and CSV/TSV readers: real files, files pandas writes, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tracker.ingest import ingest
from tracker.readers import Sample, _tabular, best_reader, csv_table, jsonl
from tracker.readers._tabular import NO_STEP

MS_SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload/logging.jsonl"
LLAMA_FACTORY = "jsonl/syGOAT__Mistral-v0.2-Translator-bf16/trainer_log.jsonl"
LIGHTNING_CSV = [
    "lightning/0Xero7__slm_training/lightning_logs/version_0/metrics.csv",
    "lightning/0Xero7__slm_training/lightning_logs/version_5/metrics.csv",
    "lightning/BvoJa__GPTTT/lightning_logs/version_0/metrics.csv",
    "lightning/Melissasssss__TurnGPT/lightning_logs/version_0/metrics.csv",
]


def statuses(report) -> list[str]:
    return [r.status for r in report.results]


@pytest.fixture(params=["python", "pyarrow"])
def both_parsers(request, monkeypatch):
    """Small files are parsed in Python, big ones by pyarrow: every JSON-lines case takes both."""
    if request.param == "pyarrow":
        monkeypatch.setattr(_tabular, "SMALL_JSONL", 0)
    return request.param


def write_lines(path, rows, tail: str = "") -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + tail)


# Generic readers stay below the specific ones


@pytest.mark.parametrize("name", [MS_SWIFT, LLAMA_FACTORY])
def test_specific_jsonl_formats_can_outrank_the_generic_reader(corpus, name):
    path = corpus / name
    assert 0.3 <= jsonl.sniff(Sample(path)) <= 0.5
    run = jsonl.read(path)  # still readable by the fallback, every line kept
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(run.series["loss"]) == sum("loss" in row for row in lines)


@pytest.mark.parametrize("name", LIGHTNING_CSV)
def test_lightning_metrics_csv_as_a_generic_table(corpus, name):
    import pandas as pd

    path = corpus / name
    assert csv_table.sniff(Sample(path)) <= 0.45 and best_reader(path).name != "csv"
    run = csv_table.read(path)
    frame = pd.read_csv(path)
    for column in frame.columns.drop("step"):
        points = int((frame[column].notna() & frame["step"].notna()).sum())
        name_ = next((s for s in run.series.values() if s.original == column), None)
        assert (0 if name_ is None else len(name_)) == points, column  # empty cells: no point


def test_ms_swift_step_on_the_last_line_only_is_no_step_column(corpus):
    run = jsonl.read(corpus / MS_SWIFT)
    assert run.series["loss"].steps.tolist() == list(range(30))
    assert any("row number" in w for w in run.warnings)


# JSON lines (each in both parsers)


@pytest.mark.usefixtures("both_parsers")
def test_nested_objects_numeric_strings_and_summary_lines(tmp_path):
    path = tmp_path / "train.jsonl"
    rows = [{"step": s, "train": {"loss": 3 - s / 10}, "lr": "3e-4", "gpu.0.mem": 10 + s}
            for s in range(1, 6)]
    rows.insert(3, {"eval": {"loss": 2.2}})  # an eval line without a step: the step before
    rows.append({"train_runtime": 12.5, "note": "done"})  # the final summary line
    write_lines(path, rows)
    run = jsonl.read(path)
    assert run.name.endswith("/train")  # a generic file name: the folder says which run
    assert run.series["loss"].original == "train/loss"
    assert run.series["loss"].steps.tolist() == [1, 2, 3, 4, 5]
    assert run.series["lr"].values.tolist() == [3e-4] * 5
    assert run.series["eval_loss"].steps.tolist() == [3]
    assert "gpu.0.mem" in run.series  # dots inside a key are not nesting
    assert run.summary == {"train_runtime": 12.5}  # only ever on a step-less line


@pytest.mark.usefixtures("both_parsers")
def test_no_step_key_uses_the_row_number_and_says_so(tmp_path):
    path = tmp_path / "losses.jsonl"
    write_lines(path, [{"loss": 1.0 / (i + 1), "timestamp": 1.7e9 + i} for i in range(4)])
    run = jsonl.read(path)
    assert run.series["loss"].steps.tolist() == [0, 1, 2, 3]
    assert run.series["loss"].wall_time.tolist() == [1.7e9 + i for i in range(4)]
    assert "timestamp" not in run.series
    assert run.warnings == [NO_STEP]


@pytest.mark.usefixtures("both_parsers")
def test_nan_and_infinity_are_kept(store, tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"step": 1, "loss": 2.0}\n{"step": 2, "loss": NaN}\n{"step": 3, "loss": Infinity}\n')
    result = ingest(store, [path]).results[0]
    assert (result.status, result.format) == ("ingested", "jsonl")
    values = store.series(result.run_id, "loss").values
    assert values[0] == 2.0 and math.isnan(values[1]) and math.isinf(values[2])


@pytest.mark.usefixtures("both_parsers")
def test_a_growing_jsonl_appends_only_new_points(store, tmp_path):
    path = tmp_path / "live.jsonl"
    write_lines(path, [{"step": s, "loss": 1.0 / s} for s in range(1, 51)], tail='{"step": 51, "lo')
    first = ingest(store, [path]).results[0]
    assert first.points == 50  # the half-written line waits for the next ingest
    with open(path, "a") as f:
        f.write('ss": 0.02}\n')
        f.writelines(json.dumps({"step": s, "loss": 0.01}) + "\n" for s in range(52, 61))
    grown = ingest(store, [path]).results[0]
    assert (grown.status, grown.run_id, grown.points) == ("updated", first.run_id, 10)
    assert store.series(first.run_id, "loss").steps.tolist() == list(range(1, 61))


@pytest.mark.usefixtures("both_parsers")
def test_a_broken_line_is_named(store, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": \n{"step": 3, "loss": 1.0}\n')
    result = ingest(store, [path]).results[0]
    assert result.status == "error" and result.reason.startswith("line 2:")


@pytest.mark.usefixtures("both_parsers")
def test_non_utf8_bytes_do_not_stop_a_file(store, tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 2.0, "note": "caf\xe9"}\n{"step": 2, "loss": 1.5}\n')
    result = ingest(store, [path]).results[0]
    assert result.status == "ingested", result.reason
    assert store.series(result.run_id, "loss").values.tolist() == [2.0, 1.5]


@pytest.mark.usefixtures("both_parsers")
def test_json_lines_without_numbers_are_not_claimed(tmp_path):
    path = tmp_path / "events.jsonl"
    write_lines(path, [{"event": "start", "step": 1}, {"event": "stop", "step": 2}])
    assert jsonl.sniff(Sample(path)) == 0.0


@pytest.mark.usefixtures("both_parsers")
def test_single_object_json_files_are_not_json_lines(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 64, "num_layers": 2}))
    assert jsonl.sniff(Sample(path)) == 0.0


# CSV / TSV


def test_pandas_written_csv(store, tmp_path):
    import pandas as pd

    frame = pd.DataFrame({
        "step": [10, 20, 30, 40], "loss": [2.0, 1.5, float("nan"), 1.0],
        "val_loss": [None, 1.8, None, 1.2], "lr": [1e-4] * 4, "tag": ["a", "b", "c", "d"],
        "mem": [float("inf"), 3.0, 3.5, 3.25],
    })
    path = tmp_path / "history.csv"
    frame.to_csv(path, index=False)  # NaN and None are written as empty cells
    result = ingest(store, [path]).results[0]
    assert (result.status, result.format) == ("ingested", "csv")
    run = store.run(result.run_id)
    assert run.name.endswith("/history")
    assert store.series(run.id, "loss").steps.tolist() == [10, 20, 40]
    assert store.series(run.id, "eval_loss").steps.tolist() == [20, 40]
    assert math.isinf(store.series(run.id, "mem").values[0])  # "inf" is a value
    assert "tag" not in run.series


def test_nan_cells_written_as_text_are_kept(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("iteration,loss\n1,2.0\n2,nan\n3,\n4,NaN\n")
    loss = csv_table.read(path).series["loss"]
    assert loss.steps.tolist() == [1, 2, 4] and np.isnan(loss.values[[1, 2]]).all()


def test_tsv_and_semicolon_tables(tmp_path):
    tsv = tmp_path / "log.tsv"
    tsv.write_text("step\tloss\n1\t2.5\n2\t2.0\n")
    semi = tmp_path / "log.csv"
    semi.write_text("step;loss\n1;2.5\n2;2.0\n")
    for path in (tsv, semi):
        assert csv_table.read(path).series["loss"].values.tolist() == [2.5, 2.0]


def test_tensorboard_chart_download_names_its_series_after_the_tag(tmp_path):
    path = tmp_path / "run-gpt2_small-tag-train_loss.csv"
    path.write_text("Wall time,Step,Value\n1700000000.5,1,2.5\n1700000010.5,2,2.25\n")
    run = csv_table.read(path)
    assert run.name == "gpt2_small" and set(run.series) == {"loss"}
    assert run.series["loss"].wall_time.tolist() == [1700000000.5, 1700000010.5]


def test_csv_without_numeric_columns_is_rejected(store, tmp_path):
    path = tmp_path / "names.csv"
    path.write_text("name,city\nada,london\nalan,wilmslow\n")
    result = ingest(store, [path]).results[0]
    assert result.status == "error"
    assert "no numeric columns" in result.reason or "unrecognised format" in result.reason
    with pytest.raises(Exception, match="no numeric columns"):
        csv_table.read(path)


@pytest.mark.parametrize("name", ["junk.csv", "junk.jsonl", "junk.tsv"])
def test_binary_junk_is_an_error_and_other_files_go_on(store, tmp_path, name):
    junk = tmp_path / name
    junk.write_bytes(b"\x00\x01\x02PK\x03\x04" * 500)
    good = tmp_path / "good.jsonl"
    write_lines(good, [{"step": 1, "loss": 1.0}])
    report = ingest(store, [junk, good])
    assert statuses(report) == ["error", "ingested"]
    assert "binary" in report.results[0].reason


def test_non_utf8_csv(store, tmp_path):
    path = tmp_path / "metrics_latin1.csv"
    path.write_bytes(b"step,loss,note\n1,2.0,caf\xe9\n2,1.5,ok\n")
    result = ingest(store, [path]).results[0]
    assert result.status == "ingested", result.reason
    assert store.series(result.run_id, "loss").values.tolist() == [2.0, 1.5]
