"""One job, one run: a GPU sampler beside an ms-swift log, two Lightning loggers in two folders,
a console log beside its trainer_state.json; merging and splitting by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.jobs import Clock, place
from core.runlog import Series
from tracker.calibration import run_samples
from tracker.ingest import ingest
from tracker.readers import best_reader
from tracker.store import Store

SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload"


@pytest.fixture
def swift(corpus, tmp_path) -> Path:
    """A copy of the ms-swift run folder: logging.jsonl, gpu_metrics.jsonl, an FSDP config."""
    return Path(shutil.copytree(corpus / SWIFT, tmp_path / "swift"))


@pytest.fixture(scope="module")
def two_loggers(tmp_path_factory) -> Path:
    """A tiny Lightning run logged by CSVLogger and TensorBoardLogger into folders of their own."""
    from tests.producers import train_lightning

    root = tmp_path_factory.mktemp("two-loggers")
    train_lightning(root, steps=30, own_folders=True)
    return root


def _read(path: Path):
    [log] = best_reader(path).read(path)
    return log


def test_the_ms_swift_folder_with_its_gpu_sampler_is_one_run_with_gpu_metrics(store, swift):
    report = ingest(store, [swift])
    assert report.ok, report.to_dict()
    [run] = store.runs()
    assert {r.run_id for r in report.results} == {run.id}
    assert run.format == "ms_swift" and run.shape.n_gpus == 8 and run.shape.gpu_mem_gib == 79.65
    gpus = {f"{kind}/gpu{i}" for kind in ("mem_used_gib", "gpu_util_pct", "power_w")
            for i in range(8)}
    assert gpus <= set(run.series) and "mem_used_gib" in run.series
    [part] = store.details(run.id).parts
    assert (part.role, Path(part.source_path).name) == ("system", "gpu_metrics.jsonl")
    assert "gpu_util_pct/gpu0" in part.metrics and "its last step" in part.note
    loss = store.series(run.id, "loss")
    memory = store.series(run.id, "mem_used_gib")
    # One point per training step, the busiest GPU's peak over the samples of that step.
    assert set(memory.steps) == set(loss.steps)
    samples = _read(swift / "gpu_metrics.jsonl").series["mem_used_gib"]
    assert memory.values.max() == pytest.approx(samples.values.max())
    files = {Path(s.path).name for s in store.details(run.id).sources}
    assert {"logging.jsonl", "gpu_metrics.jsonl"} <= files
    assert store.findings(run.id)[0].kind == "memory_tight"  # the sampler's memory, diagnosed


def test_the_calibration_reads_the_samplers_memory_as_the_device_peak(store, swift):
    ingest(store, [swift])
    [run] = store.runs()
    store.set_shape_field(run.id, "method", "full")
    peaks = {s.counter: s.peak_gib for s in run_samples(store, store.run(run.id))}
    assert peaks["device"] == pytest.approx(store.run(run.id).stat("mem_used_gib", "max"))


def test_a_sampler_joins_whichever_of_the_two_is_ingested_first(store, swift):
    first = ingest(store, [swift / "gpu_metrics.jsonl"])
    assert [r.run_name for r in first.results] == [store.runs()[0].name]
    second = ingest(store, [swift / "logging.jsonl"])
    [run] = store.runs()
    [result] = second.results
    assert result.run_id == run.id and result.reason == "took in the GPU sampler log gpu_metrics.jsonl"
    assert "gpu_util_pct/gpu3" in run.series
    assert [r.status for r in ingest(store, [swift]).results] == ["duplicate", "duplicate"]


def test_a_grown_sampler_log_updates_its_part(store, swift):
    log = swift / "gpu_metrics.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:400]))
    ingest(store, [swift])
    [run] = store.runs()
    before = store.series(run.id, "gpu_util_pct/gpu0")
    log.write_text("".join(lines))
    [result] = [r for r in ingest(store, [swift]).results if r.status != "duplicate"]
    assert result.status == "updated" and result.run_id == run.id
    after = store.series(run.id, "gpu_util_pct/gpu0")
    assert len(store.runs()) == 1 and after.steps.max() >= before.steps.max()
    assert len(store.details(run.id).parts) == 1


def test_samples_are_placed_by_the_runs_wall_clock_when_it_has_one():
    steps = np.arange(1, 11)
    loss = Series("loss", steps, np.linspace(3, 2, 10), wall_time=1000.0 + 10 * steps)
    walls = 1000.0 + np.arange(0, 130, 2.5)  # every 2.5 s from before the run to after it
    memory = Series("mem_used_gib", np.arange(len(walls)), np.arange(len(walls), dtype=float),
                    wall_time=walls)
    placed = place({"mem_used_gib": memory}, Clock.of({"loss": loss}), (1, 10))
    out = placed.series["mem_used_gib"]
    assert list(out.steps) == list(range(1, 11))
    # Step 3 ran from t=1020 (step 2's stamp) to t=1030: the samples at 1022.5, 1025, 1027.5, 1030.
    assert out.values[2] == memory.values[walls == 1030.0][0]
    # Step 1 ran from t=1000 (one interval before its stamp): samples up to then are left out.
    assert placed.left_out == int((walls <= 1000).sum() + (walls > 1100).sum())


def test_two_lightning_loggers_in_two_folders_are_one_run(store, two_loggers):
    report = ingest(store, [two_loggers])
    assert report.ok, report.to_dict()
    [run] = store.runs()
    assert {r.run_id for r in report.results} == {run.id}
    [part] = store.details(run.id).parts
    assert part.role == "logger" and Path(part.source_path).parent.name == "tb_logs"
    assert "another log of the same training" in report.results[1].reason
    csv = _read(two_loggers / "csv_logs" / "version_0")
    loss = store.series(run.id, "loss")
    np.testing.assert_allclose(loss.values, csv.series["loss"].values, rtol=1e-6)
    assert loss.wall_time is not None  # TensorBoard's copy, with its wall times, was kept
    assert sorted(run.series) == sorted(csv.series)  # every metric once


def test_the_same_kind_of_logger_with_the_same_curve_stays_a_run_of_its_own(store, two_loggers,
                                                                           tmp_path):
    rerun = Path(shutil.copytree(two_loggers / "csv_logs", tmp_path / "rerun"))
    with (rerun / "version_0" / "hparams.yaml").open("a") as out:
        out.write("note: a deterministic rerun\n")  # other content, one curve
    ingest(store, [two_loggers / "csv_logs", rerun])
    assert len(store.runs()) == 2 and all(not store.details(r.id).parts for r in store.runs())


def test_a_console_log_beside_its_output_folder_joins_its_run(store, corpus, tmp_path):
    job = tmp_path / "cpt-job"
    shutil.copytree(corpus / "hf_trainer" / "Jaong__Checkpoint-of-CPT", job / "output")
    shutil.copy(corpus / "text_logs" / "hf_trainer_console" / "Jaong__Checkpoint-of-CPT__cmd.txt",
                job / "cmd.txt")
    ingest(store, [job])
    [run] = store.runs()
    [part] = store.details(run.id).parts
    assert {run.format, part.format} == {"hf_console", "hf_trainer"}
    assert "loss" in part.duplicates


def test_split_and_merge_by_hand(store, two_loggers):
    ingest(store, [two_loggers])
    [job] = store.runs()
    [part] = store.details(job.id).parts
    apart = store.split_part(part.id)
    runs = {r.id: r for r in store.runs()}
    assert set(runs) == {job.id, apart} and not store.details(job.id).parts
    assert runs[apart].name == "tb_logs/version_0" and runs[apart].shape.framework == "lightning"
    for run in runs.values():
        assert {"loss", "lr", "eval_loss"} <= set(run.series)
    assert runs[apart].colour != runs[job.id].colour
    assert [r.status for r in ingest(store, [two_loggers]).results] == ["duplicate"] * 2
    assert len(store.runs()) == 2  # split off: ingest never merges it again
    assert store.merge_runs(job.id, [apart]) == ["tb_logs/version_0 joined csv_logs/version_0"]
    assert [r.id for r in store.runs()] == [job.id]


def test_a_run_keeps_its_colour_after_the_database_is_opened_again(tmp_path, swift, corpus):
    db = str(tmp_path / "colours.db")
    store = Store(db)
    ingest(store, [swift, corpus / "hf_trainer" / "Jaong__Checkpoint-of-CPT"])
    colours = {r.id: r.colour for r in store.runs()}
    assert len(set(colours.values())) == 2 and all(c.startswith("#") for c in colours.values())
    store.close()
    assert {r.id: r.colour for r in Store(db).runs()} == colours


def test_a_user_colour_is_kept(store, swift):
    ingest(store, [swift])
    [run] = store.runs()
    store.set_colour(run.id, "#123456")
    assert store.run(run.id).colour == "#123456"
    extra = swift / "logging.jsonl"
    extra.write_text(extra.read_text() + json.dumps({"loss": 1.0}) + "\n")
    ingest(store, [swift])
    assert store.run(run.id).colour == "#123456"
