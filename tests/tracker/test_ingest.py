from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import text

from tracker.ingest import NO_METRICS, ingest

HEADER = {"headroom": 1, "run": {"name": "demo", "shape": {"seq_len": 2048, "n_gpus": 8}}}


@pytest.fixture
def store(backend_store):
    return backend_store


def write_jsonl(path: Path, steps: range, header: dict = HEADER, extra: str = "") -> Path:
    lines = [json.dumps(header)]
    lines += [json.dumps({"step": s, "loss": 3.0 - s / 1000, "lr": 1e-4}) for s in steps]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def statuses(report) -> list[str]:
    return [r.status for r in report.results]


def test_ingest_is_idempotent_and_appends_growth(store, tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", range(1, 101))
    first = ingest(store, [log])
    assert statuses(first) == ["ingested"] and first.results[0].points == 200
    assert statuses(ingest(store, [log])) == ["duplicate"]
    with open(log, "a") as f:
        for s in range(101, 151):
            f.write(json.dumps({"step": s, "loss": 2.0, "lr": 1e-4}) + "\n")
    grown = ingest(store, [log])
    assert statuses(grown) == ["updated"] and grown.results[0].points == 100
    run_id = grown.results[0].run_id
    assert store.series(run_id, "loss").steps.tolist() == list(range(1, 151))
    assert store.run_count() == 1


def test_same_content_elsewhere_is_a_duplicate(store, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", range(1, 5))
    b = tmp_path / "copy" / "b.jsonl"
    b.parent.mkdir()
    b.write_bytes(a.read_bytes())
    report = ingest(store, [a, b])
    assert statuses(report) == ["ingested", "duplicate"]
    assert "same content as run" in report.results[1].reason


def test_shape_from_the_header_records_its_source(store, tmp_path):
    report = ingest(store, [write_jsonl(tmp_path / "run.jsonl", range(1, 3))])
    shape = store.run(report.results[0].run_id).shape
    assert shape.seq_len == 2048 and shape.sources["seq_len"] == "headroom header"


def test_nan_and_inf_are_kept(store, tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_text(
        json.dumps(HEADER) + "\n" + '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": NaN}\n'
        '{"step": 3, "loss": Infinity}\n'
    )
    run_id = ingest(store, [path]).results[0].run_id
    values = store.series(run_id, "loss").values
    assert values[0] == 2.5 and math.isnan(values[1]) and math.isinf(values[2])
    assert store.run(run_id).series["loss"].first_nonfinite_step == 2


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.json", b"", "empty file"),
        ("trainer_state.json", b'{"global_step": 10, "log_history": [{"step": 1, "loss": 2.0},', "truncated JSON"),
        ("junk.json", bytes(range(256)) * 40, "binary"),
        ("junk.csv", b"\x00\x01\x02PK\x03\x04" * 500, "binary"),
        ("notes.txt", b"just some words, nothing like a training log\n", "unrecognised format"),
    ],
)
def test_bad_files_get_a_clear_error_and_others_go_on(store, tmp_path, name, content, reason):
    bad = tmp_path / name
    bad.write_bytes(content)
    good = write_jsonl(tmp_path / "good.jsonl", range(1, 4))
    report = ingest(store, [bad, good])
    assert statuses(report) == ["error", "ingested"]
    assert reason in report.results[0].reason
    assert "\n" not in report.results[0].reason and "Traceback" not in report.results[0].reason
    assert store.run_count() == 1


def test_truncated_json_names_the_line(store, tmp_path):
    state = {"global_step": 3, "log_history": [{"step": i, "loss": 1.0} for i in range(1, 4)]}
    text_ = json.dumps(state, indent=2)
    bad = tmp_path / "trainer_state.json"
    bad.write_text(text_[: len(text_) // 2])
    reason = ingest(store, [bad]).results[0].reason
    assert reason.startswith("line ") and "truncated JSON" in reason


def test_a_broken_line_inside_jsonl_is_an_error_with_its_number(store, tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", range(1, 5))
    lines = log.read_text().splitlines()
    lines[3] = lines[3][:10]
    log.write_text("\n".join(lines) + "\n")
    result = ingest(store, [log]).results[0]
    assert result.status == "error" and result.reason.startswith("line 4:")


def test_a_half_written_last_line_is_left_for_later(store, tmp_path):
    log = write_jsonl(tmp_path / "run.jsonl", range(1, 5), extra='{"step": 5, "lo')
    result = ingest(store, [log]).results[0]
    assert result.status == "ingested"
    assert store.series(result.run_id, "loss").steps.tolist() == [1, 2, 3, 4]


def test_unicode_and_spaces_in_paths(store, tmp_path):
    folder = tmp_path / "données d'entraînement" / "运行 1"
    folder.mkdir(parents=True)
    log = write_jsonl(folder / "journal à jour.jsonl", range(1, 3))
    report = ingest(store, [folder.parent])
    assert statuses(report) == ["ingested"]
    assert store.run(report.results[0].run_id).source_path == str(log)


def test_non_utf8_bytes_do_not_stop_a_file(store, tmp_path):
    path = tmp_path / "latin.jsonl"
    header = json.dumps({"headroom": 1, "run": {"name": "caf"}}).encode()[:-3] + b'\xe9"}}'
    path.write_bytes(header + b'\n{"step": 1, "loss": 1.0}\n')
    result = ingest(store, [path]).results[0]
    assert result.status == "ingested", result.reason


def test_symlink_loop_terminates(store, tmp_path):
    root = tmp_path / "runs"
    (root / "a").mkdir(parents=True)
    write_jsonl(root / "a" / "run.jsonl", range(1, 3))
    os.symlink(root, root / "a" / "loop")
    report = ingest(store, [root])
    assert statuses(report).count("ingested") == 1
    assert store.run_count() == 1


def test_folder_walk_ignores_non_logs_and_companions_but_reports_unknown_logs(store, tmp_path):
    folder = tmp_path / "mixed"
    (folder / "other").mkdir(parents=True)
    write_jsonl(folder / "run.jsonl", range(1, 3))
    (folder / "args.json").write_text('{"seq_len": 2048}')  # read with the log beside it
    (folder / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (folder / "other" / "readme.txt").write_text("hello\n")
    report = ingest(store, [folder])
    assert report.ignored == 2
    assert sorted((r.status, Path(r.path).name) for r in report.results) == [
        ("ingested", "run.jsonl"), ("skipped", "readme.txt")]


def test_missing_path_is_an_error(store, tmp_path):
    report = ingest(store, [tmp_path / "nope.jsonl"])
    assert statuses(report) == ["error"] and report.results[0].reason == "no such file or folder"
    assert not report.ok


def test_a_failure_while_storing_leaves_nothing_half_stored(store, tmp_path, monkeypatch):
    from tracker.db import series as series_store

    real_write = series_store.write_all

    def failing_write(unit, run_id, series):
        real_write(unit, run_id, series)  # the series are in: the failure comes after
        raise RuntimeError("disk full")

    monkeypatch.setattr(series_store, "write_all", failing_write)
    report = ingest(store, [write_jsonl(tmp_path / "run.jsonl", range(1, 4))])
    assert statuses(report) == ["error"] and "disk full" in report.results[0].reason
    with store.session() as s:
        for table in ("run", "series", "series_chunk", "source_file"):
            assert s.session.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar() == 0


def test_cancel_stops_between_files(store, tmp_path):
    logs = [write_jsonl(tmp_path / f"r{i}.jsonl", range(1, 3 + i)) for i in range(4)]
    seen = []
    report = ingest(store, logs, progress=lambda d, t, p: seen.append(d), cancel=lambda: len(seen) >= 2)
    assert report.cancelled and len(report.results) == 2


KILLED_INGEST = textwrap.dedent(
    """
    import sys
    from tracker.ingest import ingest
    from tracker.store import Store
    store = Store(sys.argv[1])
    def progress(done, total, path):
        print(done, flush=True)
    ingest(store, sys.argv[2:], progress=progress)
    """
)


def test_process_killed_mid_ingest_leaves_a_consistent_database(tmp_path):
    from tracker.store import Store

    logs = [str(write_jsonl(tmp_path / f"run{i:03d}.jsonl", range(1, 2000 + i))) for i in range(60)]
    db = str(tmp_path / "killed.db")
    Store(db).close()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_INGEST, db, *logs],
                            stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if int(line) >= 20:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    store = Store(db)
    with store.session() as s:
        assert s.session.execute(text("PRAGMA integrity_check")).scalar() == "ok"
        stored = s.session.execute(text("SELECT COUNT(*) FROM run")).scalar()
        # every stored series has exactly the points its summary counts
        bad = s.session.execute(text(
            "SELECT COUNT(*) FROM series s WHERE s.count != "
            "(SELECT COALESCE(SUM(n), 0) FROM series_chunk c WHERE c.series_id = s.id)"
        )).scalar()
    assert 20 <= stored < 60 and bad == 0
    report = ingest(store, logs)
    assert report.ok and store.run_count() == 60
    assert statuses(report).count("ingested") == 60 - stored


def test_a_run_without_metrics_is_stored_with_a_warning(store, corpus):
    report = ingest(store, [corpus / "wandb" / "0-KaiKai-0__stanford_alpaca"])
    [result] = report.results
    assert result.status == "ingested" and result.points == 0
    assert result.warnings == [NO_METRICS]
