"""TensorBoard event files: the corpus, and files written by torch's SummaryWriter."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.metrics import GIB
from tests.producers import write_summary_writer, write_tensor_scalars
from tracker.ingest import ingest
from tracker.readers import ReaderError, best_reader
from tracker.readers import tensorboard as tb
from tracker.readers._restarts import Points, untangle
from tracker.readers._scalar_events import decode
from tracker.readers._tfrecord import _crc32c, frame, scan

TB = "tensorboard"
MEGATRON = "elena-lyulina__Megatron-LM-Attention-Benchmark/correctness_full_flash_1node_1gpu_tp1_pp1_1728401"
HEADER_ONLY = "elena-lyulina__Megatron-LM-Attention-Benchmark/correctness_full_flash_1node_1gpu_tp1_pp1_1719340"
HF_DS = "fyh2001__megatron-sft-recipes__p0_baseline_ds_prod_full_epoch"
HF_FSDP = "fyh2001__megatron-sft-recipes__p0_baseline_fsdp2_full_epoch"
TEXT_ONLY = "ananyakaligal__Gemma2B-Finetuning"


# The corpus: every event file ingests with the expected series, or is refused with a reason.


@pytest.mark.parametrize(
    ("folder", "points"),
    [(MEGATRON, {"loss": 15, "mem_peak_gib": 15, "lr": 15, "grad_norm": 15, "batch_size": 15}),
     (HF_DS, {"loss": 294, "lr": 294, "grad_norm": 294, "epoch": 295, "train/token_acc": 294}),
     (HF_FSDP, {"loss": 2353, "lr": 2353, "grad_norm": 2353, "epoch": 2354})],
)
def test_corpus_runs_ingest_with_every_point(corpus, store, folder, points):
    report = ingest(store, [corpus / TB / folder])
    assert [r.status for r in report.results] == ["ingested"]
    assert report.results[0].format == TB
    run = store.runs()[0]
    assert {name: run.series[name].count for name in points} == points


@pytest.mark.parametrize(
    ("folder", "reason"),
    [(HEADER_ONLY, "no scalar data: the run wrote only the file header"),
     (TEXT_ONLY, "no scalar data: the run wrote only text or hparams summaries (args, model_config)")],
)
def test_corpus_files_without_scalars_are_refused_with_the_reason(corpus, store, folder, reason):
    report = ingest(store, [corpus / TB / folder])
    assert [(r.status, r.format, r.reason) for r in report.results] == [("error", TB, reason)]


def test_megatron_values_units_and_arguments(corpus):
    run = tb.read_runs(corpus / TB / MEGATRON)[0]
    loss = run.series["loss"]
    assert (int(loss.steps[0]), loss.values[0]) == (1, pytest.approx(10.4819, abs=1e-4))
    assert np.all(np.diff(loss.wall_time) > 0)
    peak = run.series["mem_peak_gib"]  # mem-max-allocated-bytes, in GiB
    assert peak.original == "mem-max-allocated-bytes" and 1 < peak.values.max() < 200
    shape = run.shape
    assert (shape.n_layers, shape.hidden, shape.n_heads, shape.n_kv_heads) == (16, 2048, 32, 8)
    assert (shape.seq_len, shape.micro_batch, shape.global_batch) == (8192, 2, 80)
    assert (shape.tp, shape.pp, shape.precision, shape.framework) == (1, 1, "mixed-bf16", "megatron")
    assert run.config["num_layers"] == 16 and run.config["bf16"] is True


def test_hf_text_summaries_fill_config_shape_and_summary(corpus):
    run = tb.read_runs(corpus / TB / HF_FSDP)[0]
    assert run.config["args"]["per_device_train_batch_size"] == 1
    assert run.shape.sources["micro_batch"] == "args/text_summary"
    assert run.shape.sources["n_layers"] == "model_config/text_summary"
    assert run.shape.framework == "transformers" and run.shape.fsdp == "full_shard"
    assert run.summary["train_runtime"] == pytest.approx(4426.386, rel=1e-5)
    assert "train/train_runtime" not in run.series  # an end-of-run total, not a curve
    assert run.started is not None and run.started.year >= 2025


def test_tensorboard_wins_the_sniff_on_every_corpus_file(corpus):
    for path in sorted((corpus / TB).rglob("events.out.tfevents.*")):
        assert best_reader(path).name == TB, path
        assert best_reader(path.parent).name == TB, path.parent


# Files written by the real libraries.


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A run that logged steps 0-39, was resumed at step 25 into a second file, and ran 10 more."""
    folder = tmp_path_factory.mktemp("resumed") / "runs" / "Dec02_host"
    written = write_summary_writer(folder, steps=40, nan_at=7, restart_at=25, extra_steps=10)
    return folder, written


def test_every_point_kept_with_canonical_names_wall_times_and_nan(tmp_path, store):
    written = write_summary_writer(tmp_path / "run", steps=60, nan_at=7)
    ingest(store, [tmp_path / "run"])
    run = store.runs()[0]
    assert run.name == "run" and run.format == TB
    assert {n: run.series[n].count for n in ("loss", "lr", "mem_peak_gib", "eval_loss")} == {
        "loss": 60, "lr": 60, "mem_peak_gib": 60, "eval_loss": 6}
    loss = store.series(run.id, "loss")
    assert list(loss.steps) == list(range(60)) and loss.original == "train/loss"
    assert math.isnan(loss.values[7]) and run.series["loss"].first_nonfinite_step == 7
    np.testing.assert_allclose(loss.values[8:], [v for _, v in written["train/loss"][8:]], rtol=1e-6)
    assert loss.wall_time is not None and np.all(np.diff(loss.wall_time) >= 0)
    memory = store.series(run.id, "mem_peak_gib").values
    np.testing.assert_allclose(memory, [v / GIB for _, v in written["max_memory_allocated"]])


def test_resume_into_a_second_file_replaces_orphans_and_is_recorded(resumed):
    folder, written = resumed
    assert len(tb.event_files(folder)) == 2
    run = tb.read_runs(folder)[0]
    assert run.name == "resumed0/Dec02_host" or run.name.endswith("/Dec02_host")
    loss = run.series["loss"]
    assert list(loss.steps) == list(range(35))  # 0-24 from the first file, 25-34 from the second
    second = dict(written["train/loss"][40:])
    assert loss.values[30] == pytest.approx(second[30])  # the new timeline's value, not the old one
    assert list(run.series["eval_loss"].steps) == [0, 10, 20, 30]  # its old step 30 is gone too
    [event] = run.events
    assert (event.kind, event.step, event.data["from_step"]) == ("resume", 25, 39)
    assert event.data["dropped_points"] == 3 * 15 + 1  # steps 25-39 of three tags, eval at 30
    assert event.wall_time is not None


def test_tf2_tensor_scalars_with_metadata_on_the_first_value_only(tmp_path):
    written = write_tensor_scalars(tmp_path, steps=20)
    run = tb.read_runs(tmp_path)[0]
    loss = run.series["loss"]
    assert len(loss) == 20
    np.testing.assert_allclose(loss.values, [v for _, v in written], rtol=1e-6)


def test_folder_with_subruns_gives_one_run_each(tmp_path):
    write_summary_writer(tmp_path, steps=5)
    write_summary_writer(tmp_path / "eval", steps=3)
    runs = tb.read_runs(tmp_path)
    assert [r.key for r in runs] == ["", "eval"]
    assert [len(r.series["loss"]) for r in runs] == [5, 3]


def test_growing_file_appends_only_new_points(tmp_path, store):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path))
    for step in range(30):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
    writer.flush()
    first = ingest(store, [tmp_path]).results[0]
    for step in range(30, 45):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step)
    writer.close()
    second = ingest(store, [tmp_path]).results[0]
    assert (first.status, first.points) == ("ingested", 30)
    assert (second.status, second.points) == ("updated", 15)
    assert store.runs()[0].series["loss"].count == 45
    assert ingest(store, [tmp_path]).results[0].status == "duplicate"


def test_record_cut_short_at_the_end_is_a_file_still_being_written(resumed, tmp_path):
    source = tb.event_files(resumed[0])[0]
    cut = tmp_path / source.name
    cut.write_bytes(source.read_bytes()[:-7])
    run = tb.read_runs(cut)[0]
    # The last record, step 39's memory figure, is not complete yet; step 39's loss is.
    assert (len(run.series["loss"]), len(run.series["mem_peak_gib"])) == (40, 39)
    assert "the last record is incomplete" in run.warnings[0]


def test_damaged_record_is_an_error_naming_it(resumed, tmp_path, store):
    data = bytearray(tb.event_files(resumed[0])[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "events.out.tfevents.1.host"
    bad.write_bytes(bytes(data))
    with pytest.raises(ReaderError, match=r"record [\d,]+ at byte [\d,]+: damaged record"):
        tb.read_runs(bad)
    result = ingest(store, [bad]).results[0]
    assert result.status == "error" and "damaged record" in result.reason


def test_junk_named_like_an_event_file(tmp_path, store):
    junk = tmp_path / "events.out.tfevents.1700000000.host"
    junk.write_bytes(b"this is not a TFRecord file at all, just text\n" * 3)
    result = ingest(store, [junk]).results[0]
    assert result.status == "error" and "damaged record header" in result.reason


def test_framing_round_trip_and_truncation():
    payloads = [b"", b"a", b"event" * 100]
    data = b"".join(frame(p) for p in payloads)
    records = scan(data)
    assert [data[o : o + n] for o, n in zip(records.offsets, records.lengths, strict=True)] == payloads
    cut = scan(data[:-1])
    assert len(cut) == 2 and cut.incomplete_at == len(data) - len(frame(payloads[2]))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=80), min_size=1, max_size=20))
def test_vectorised_crc_is_crc32c(rows):
    import google_crc32c

    for row in rows:
        matrix = np.frombuffer(row, dtype=np.uint8).reshape(1, -1)
        assert int(_crc32c(matrix)[0]) == google_crc32c.value(row)


_EVENTS = st.builds(
    dict,
    wall=st.one_of(st.just(0.0), st.floats(allow_nan=False, allow_infinity=False)),
    step=st.one_of(st.just(0), st.integers(-(2**63), 2**63 - 1), st.integers(0, 10**6)),
    tag=st.text(max_size=150),
    value=st.floats(width=32),
    extra=st.sampled_from(["", "metadata", "second value", "file_version"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENTS, min_size=1, max_size=12))
@example([{"wall": 1.0, "step": 3, "tag": "t" * n, "value": 1.0, "extra": ""} for n in (118, 119)])
@example([{"wall": 1.0, "step": 0, "tag": t, "value": 0.0, "extra": ""} for t in ("x" * 100, "0")])
def test_fast_decoding_matches_protobuf_or_declines(specs):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    payloads = []
    for spec in specs:
        value = Summary.Value(tag=spec["tag"], simple_value=spec["value"])
        event = Event(wall_time=spec["wall"], step=spec["step"], summary=Summary(value=[value]))
        if spec["extra"] == "metadata":
            event.summary.value[0].metadata.plugin_data.plugin_name = "scalars"
        elif spec["extra"] == "second value":
            event.summary.value.add(tag="b", simple_value=1.0)
        elif spec["extra"] == "file_version":
            event = Event(wall_time=spec["wall"], file_version="brain.Event:2")
        payloads.append(event.SerializeToString())
    data = b"".join(frame(p) for p in payloads)
    records = scan(data)
    fast = decode(data, records.offsets, records.lengths)
    for row, index in enumerate(np.flatnonzero(fast.matched)):
        event = Event.FromString(payloads[index])
        [value] = event.summary.value
        assert fast.tags[fast.tag_ids[row]] == value.tag
        assert (int(fast.steps[row]), float(fast.wall_time[row])) == (event.step, event.wall_time)
        assert np.float32(fast.values[row]).tobytes() == np.float32(value.simple_value).tobytes()
    # What the fast path takes: the plain layout (proto3 omits a zero wall time and an empty
    # tag) with one-byte lengths (the summary's, tag + 9 bytes, must stay under 128).
    simple = [s["extra"] == "" and np.float64(s["wall"]).tobytes() != bytes(8)  # -0.0 is written
              and 0 < len(s["tag"].encode()) <= 118 for s in specs]
    assert list(fast.matched) == simple


# Restarts, with an injected stream of points (as TensorBoard's own tests do).


def _points(steps, start=0):
    steps = np.asarray(steps)
    return Points(steps, steps * 1.0 + 0.5, positions=np.arange(start, start + len(steps)))


def test_untangle_keeps_the_newest_timeline_per_step():
    columns, events, warnings = untangle({"loss": _points([0, 1, 2, 3, 4, 2, 3, 4, 5])})
    assert list(columns["loss"].steps) == [0, 1, 2, 3, 4, 5]
    assert list(columns["loss"].positions) == [0, 1, 5, 6, 7, 8]
    assert [(e.step, e.data["from_step"], e.data["dropped_points"]) for e in events] == [(2, 4, 3)]
    assert warnings == []


def test_untangle_two_resumes_and_a_metric_that_never_goes_back():
    loss = _points([0, 1, 2, 3, 1, 2, 3, 4, 5, 3, 4])
    rare = Points(np.array([2]), np.array([9.0]), positions=np.array([2]))  # logged once, orphaned
    columns, events, _ = untangle({"loss": loss, "rare": rare})
    assert list(columns["loss"].steps) == [0, 1, 2, 3, 4]
    assert len(columns["rare"].steps) == 0
    assert [e.step for e in events] == [1, 3]


def test_a_step_counter_that_resets_every_epoch_is_kept_as_written():
    steps = np.tile(np.arange(10), 60)
    columns, events, warnings = untangle({"loss": _points(steps)})
    assert len(columns["loss"].steps) == 600 and events == []
    assert "goes back 59 times" in warnings[0]


def test_tree_with_resumed_run_ingests(resumed, store, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(resumed[0], copy)
    result = ingest(store, [copy]).results[0]
    assert result.status == "ingested"
    assert [e.kind for e in store.events(result.run_id)] == ["resume"]
