"""W&B readers: corpus run folders, a real offline run of the HF Trainer, chart CSV exports."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys

import numpy as np
import pytest

from tracker.ingest import ingest
from tracker.readers import Sample, best_reader, wandb_dir, wandb_export
from tracker.readers._common import ReaderError
from tracker.readers._wandb_log import INSTALL_HINT, records

WANDB = "wandb"
NANOGPT = "jackokeefe11__nanoGPT/run-20240214_195452-kt2awly2"
ALPACA = "0-KaiKai-0__stanford_alpaca/run-20231114_065120-r5q04ate"
GEMMA = "ananyakaligal__Gemma2B-Finetuning/latest-run"


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    """A tiny GPT-2 trained by the HF Trainer with report_to=["wandb"], W&B offline."""
    pytest.importorskip("wandb")
    from tests.producers import train_hf_reporting

    out = train_hf_reporting(tmp_path_factory.mktemp("wandb_run"), "wandb")
    (run,) = (out / "wandb").glob("offline-run-*")
    return run


def test_corpus_nanogpt_run_with_its_transaction_log(store, corpus):
    pytest.importorskip("wandb")
    report = ingest(store, [corpus / WANDB / NANOGPT])
    assert [r.status for r in report.results] == ["ingested"], report.results
    run = store.run(report.results[0].run_id)
    assert (run.format, run.name) == ("wandb", "mini-gpt")
    assert run.started_at.isoformat().startswith("2024-02-14T19:54:52")
    # History from the .wandb file, on nanoGPT's own iteration numbers.
    assert {"loss", "eval_loss", "lr", "mfu"} <= set(run.series)
    assert run.series["loss"].count == 21 and run.series["loss"].last_step == 5000
    # Per-GPU memory from the system metrics; the busiest of three 11 GiB cards.
    assert {"mem_used_gib", "mem_used_gib/gpu0", "mem_used_gib/gpu2"} <= set(run.series)
    peak = run.series["mem_used_gib"].max
    assert peak == run.series["mem_used_gib/gpu0"].max and 8 < peak < run.shape.gpu_mem_gib == 11.0
    assert run.series["mem_used_gib"].last_step <= 5000
    assert (run.shape.gpu_model, run.shape.n_gpus) == ("NVIDIA GeForce RTX 2080 Ti", 3)
    assert (run.shape.micro_batch, run.shape.seq_len, run.shape.n_layers) == (64, 256, 6)
    assert run.shape.sources["micro_batch"] == "config.yaml"
    # output.log is the console readers' file; what only it shows joins the run.
    if best_reader(corpus / WANDB / NANOGPT / "files" / "output.log") is not None:
        assert "step_time_s" in run.series


def test_files_folder_given_alone_reads_its_run(corpus):
    pytest.importorskip("wandb")
    log = wandb_dir.read(corpus / WANDB / NANOGPT / "files")
    assert log.name == "mini-gpt" and "mem_used_gib" in log.series  # the .wandb beside files/


def test_corpus_alpaca_run_is_summary_config_and_metadata(store, corpus):
    report = ingest(store, [corpus / WANDB / ALPACA])
    run = store.run(report.results[0].run_id)
    assert report.results[0].status == "ingested" and run.series == {}
    shape = run.shape
    assert (shape.micro_batch, shape.grad_accum, shape.precision) == (2, 16, "mixed-bf16")
    assert (shape.n_layers, shape.hidden, shape.vocab, shape.family) == (32, 4096, 32001, "llama")
    assert shape.seq_len == 512  # model_max_length; not the model config's max_length of 20
    assert (shape.gpu_model, shape.n_gpus, shape.gpu_mem_gib) == ("NVIDIA A100-SXM4-80GB", 8, 80.0)
    assert shape.sources["gpu_model"] == "wandb-metadata.json"
    log = wandb_dir.read(corpus / WANDB / ALPACA)
    assert log.summary["train/global_step"] == 1218 and "_wandb/runtime" not in log.summary
    assert log.config["wandb"]["host"] == "a100-80g-nl-03"


def test_corpus_latest_run_with_only_a_summary(corpus):
    log = wandb_dir.read(corpus / WANDB / GEMMA)
    assert log.series == {} and log.summary["eval/loss"] == pytest.approx(1.3627853393554688)
    assert not any(k.startswith("confusion_matrix_table") for k in log.summary)  # a table file
    assert log.name == "ananyakaligal__Gemma2B-Finetuning/latest-run"


def test_the_wandb_folder_is_walked_to_its_runs(store, corpus):
    report = ingest(store, [corpus / WANDB])
    by_format = [r.format for r in report.results if r.status == "ingested"]
    assert by_format.count("wandb") == 3
    assert not [r for r in report.results if r.status == "error"]


def test_run_files_are_claimed_by_the_wandb_reader(corpus):
    files = corpus / WANDB / NANOGPT / "files"
    assert best_reader(files).name == WANDB
    assert best_reader(files / "wandb-summary.json").name == WANDB
    assert best_reader(corpus / WANDB / NANOGPT / "run-kt2awly2.wandb").name == WANDB
    assert wandb_dir.sniff(Sample(corpus / WANDB)) == 0.0  # the folder of runs is walked, not claimed


@pytest.mark.slow
def test_real_offline_run_of_the_hf_trainer(store, offline_run):
    report = ingest(store, [offline_run])
    assert [r.status for r in report.results] == ["ingested"], report.results
    run = store.run(report.results[0].run_id)
    assert (run.format, run.name) == ("wandb", "tiny-gpt2")
    # train/global_step, which the HF integration declares as its step metric, is the step.
    assert run.series["loss"].first_step == 2 and run.series["loss"].last_step == 16
    assert run.series["eval_loss"].last_step == 16
    assert any(name.startswith("system/") for name in run.series)  # W&B's own sampler
    assert (run.shape.micro_batch, run.shape.n_layers, run.shape.hidden) == (4, 2, 32)
    log = wandb_dir.read(offline_run)
    assert log.key == offline_run.name.rsplit("-", 1)[1]
    assert log.config["wandb"]["exit_code"] == 0 and log.config["per_device_train_batch_size"] == 4
    assert log.status == "finished"


@pytest.mark.slow
def test_hf_trainer_series_match_its_own_trainer_state(offline_run):
    state = json.loads(next(offline_run.parents[1].glob("hf/trainer_state.json")).read_text())
    losses = [(row["step"], row["loss"]) for row in state["log_history"] if "loss" in row]
    loss = wandb_dir.read(offline_run).series["loss"]
    assert loss.steps.tolist() == [step for step, _ in losses]
    assert loss.values.tolist() == pytest.approx([value for _, value in losses])


@pytest.mark.slow
def test_latest_run_link_is_not_a_second_run(store, offline_run):
    report = ingest(store, [offline_run.parent])
    ingested = [r for r in report.results if r.status == "ingested"]
    assert len(ingested) == 1 and ingested[0].path == str(offline_run)
    assert not any("symlink" in r.reason for r in report.results)


@pytest.mark.slow
def test_a_folder_of_collected_logs_is_one_run_per_log(store, tmp_path, corpus, offline_run):
    folder = tmp_path / "collected"
    folder.mkdir()
    shutil.copy(corpus / WANDB / NANOGPT / "run-kt2awly2.wandb", folder)
    shutil.copy(next(offline_run.glob("*.wandb")), folder)
    report = ingest(store, [folder])
    assert sorted(r.run_name for r in report.results) == ["mini-gpt", "tiny-gpt2"]
    assert {r.status for r in report.results} == {"ingested"}


@pytest.mark.slow
def test_a_torn_transaction_log_is_read_up_to_the_tear(tmp_path, offline_run):
    pytest.importorskip("wandb")
    copy = tmp_path / offline_run.name
    shutil.copytree(offline_run, copy)
    log_file = next(copy.glob("*.wandb"))
    whole = wandb_dir.read(copy)
    data = log_file.read_bytes()
    log_file.write_bytes(data[: len(data) * 2 // 3])  # a live run, caught mid-write
    torn = wandb_dir.read(copy)
    assert 0 < len(torn.series["loss"]) <= len(whole.series["loss"])


@pytest.mark.slow
def test_damaged_bytes_stop_the_read_with_a_warning(tmp_path, offline_run):
    data = bytearray(next(offline_run.glob("*.wandb")).read_bytes())
    data[len(data) // 2] ^= 0xFF
    warnings: list[str] = []
    payloads = list(records(bytes(data), warnings))
    assert payloads and warnings and "damaged data at byte" in warnings[0]


@pytest.mark.slow
def test_without_wandb_installed_the_log_is_named_as_unreadable(tmp_path, offline_run, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb.proto", None)  # import fails as if not installed
    with pytest.raises(ReaderError, match="install wandb"):
        wandb_dir.read(offline_run)
    # Beside other files, the run is still read, with a warning that says what is missing.
    copy = tmp_path / offline_run.name
    shutil.copytree(offline_run, copy)
    (copy / "files" / "wandb-summary.json").write_text('{"train/loss": 1.5, "_step": 3}')
    log = wandb_dir.read(copy)
    assert log.summary["train/loss"] == 1.5
    assert any(INSTALL_HINT in w for w in log.warnings)


def test_binary_junk_named_wandb_is_not_claimed(store, tmp_path):
    junk = tmp_path / "run-abc.wandb"
    junk.write_bytes(os.urandom(4096))
    assert wandb_dir.sniff(Sample(junk)) == 0.0
    assert ingest(store, [junk]).results[0].status == "error"


def test_history_jsonl_of_older_clients(tmp_path):
    run = tmp_path / "run-20200101_000000-abc123" / "files"
    run.mkdir(parents=True)
    rows = [{"_step": i, "_runtime": i * 2.0, "_timestamp": 1.6e9 + i * 2, "loss": 3 - i / 10,
             "gpu": {"mem": i}} for i in range(5)]
    rows.append({"_step": 5, "_runtime": 10.0, "_timestamp": 1.6e9 + 10, "loss": float("nan")})
    (run / "wandb-history.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    log = wandb_dir.read(run.parent)
    assert log.key == "abc123" and log.series["loss"].steps.tolist() == list(range(6))
    assert np.isnan(log.series["loss"].values[-1]) and "gpu/mem" in log.series
    assert log.series["loss"].wall_time[0] == pytest.approx(1.6e9)
    assert "_runtime" not in log.series


# W&B chart exports


def write_export(path, runs: dict[str, list[float]], bucketed: bool = False) -> None:
    """A chart export as the W&B app writes it: Step, then value, __MIN, __MAX per run."""
    header = ["Step"]
    for name in runs:
        header += [f"{name} - train/loss", f"{name} - train/loss__MIN", f"{name} - train/loss__MAX"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        writer.writerow(header)
        for i in range(max(len(v) for v in runs.values())):
            row = [str(i * 10)]
            for values in runs.values():
                if i < len(values):
                    low = values[i] - (0.5 if bucketed else 0)
                    row += [str(values[i]), str(low), str(values[i])]
                else:
                    row += ["", "", ""]
            writer.writerow(row)


def test_chart_export_holds_one_run_per_name(store, tmp_path):
    path = tmp_path / "wandb_export_2024-02-14.csv"
    write_export(path, {"mini-gpt": [3.0, 2.5, 2.0], "big-gpt - v2": [3.1, 2.4]})
    assert best_reader(path).name == "wandb_export"
    runs = {run.name: run for run in wandb_export.read_runs(path)}
    assert set(runs) == {"mini-gpt", "big-gpt - v2"}
    assert runs["big-gpt - v2"].series["loss"].steps.tolist() == [0, 10]  # empty cells: no point
    assert set(runs["mini-gpt"].series) == {"loss"}  # bounds equal to the value are dropped
    report = ingest(store, [path])
    assert [r.status for r in report.results] == ["ingested", "ingested"]
    assert len({r.run_id for r in report.results}) == 2
    assert [r.status for r in ingest(store, [path]).results] == ["duplicate"]


def test_bucketed_chart_export_keeps_its_bounds(tmp_path):
    path = tmp_path / "export.csv"
    write_export(path, {"run-a": [3.0, 2.0]}, bucketed=True)
    (run,) = wandb_export.read_runs(path)
    assert run.series["train/loss__MIN"].values.tolist() == [2.5, 1.5]
