"""MLflow file-store reader: the corpus mlruns/ tree and a real HF Trainer run logged by MLflow."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tracker.ingest import ingest
from tracker.readers import Sample, best_reader, mlflow_dir

CORPUS_RUN = "mlflow/10tanmay100__DEEPCNNCLASSIFIER/mlruns/0/cb0096518b0e4c66a94428555f05420b"


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory):
    """mlruns/ of a tiny GPT-2 trained by the HF Trainer with report_to=["mlflow"]."""
    pytest.importorskip("mlflow")
    from tests.producers import train_hf_reporting

    return train_hf_reporting(tmp_path_factory.mktemp("mlflow_run"), "mlflow") / "mlruns"


def run_folder(mlruns):
    (folder,) = [p.parent for p in mlruns.glob("*/*/meta.yaml")]
    return folder


def test_corpus_mlruns_tree_is_walked_to_its_run(store, corpus):
    report = ingest(store, [corpus / "mlflow"])
    ingested = [r for r in report.results if r.status == "ingested"]
    assert len(ingested) == 1 and ingested[0].path == str(corpus / CORPUS_RUN)
    assert not [r for r in report.results if r.status == "error"]
    run = store.run(ingested[0].run_id)
    assert (run.format, run.name) == ("mlflow", "cb009651")  # no run name: the id's start
    assert run.started_at.isoformat().startswith("2022-09-28T11:20:07")
    assert run.series["loss"].last == pytest.approx(3.2727866172790527)
    assert run.series["accuracy"].count == 1 and run.series["accuracy"].first_step == 0
    assert run.shape.micro_batch == 16 and run.shape.sources["micro_batch"] == "MLflow params"


def test_corpus_params_and_tags_are_kept(corpus):
    log = mlflow_dir.read(corpus / CORPUS_RUN)
    assert log.config["LEARNING_RATE"] == "0.01" and log.config["IMAGE_SIZE"] == "[224, 224, 3]"
    facts = log.config["mlflow"]
    assert (facts["experiment"], facts["status"]) == ("Default", "RUNNING")
    assert log.status == "running"
    assert facts["user"] == "Administrator"
    assert facts["tags"]["mlflow.source.git.commit"].startswith("adb49741")
    assert log.series["loss"].wall_time[0] == pytest.approx(1664364007.310)


def test_only_run_folders_are_claimed(corpus):
    root = corpus / CORPUS_RUN
    assert best_reader(root).name == "mlflow"
    assert mlflow_dir.sniff(Sample(root.parent)) == 0.0 and mlflow_dir.sniff(Sample(root.parents[1])) == 0.0


@pytest.mark.slow
def test_real_hf_trainer_run(store, mlruns):
    folder = run_folder(mlruns)
    report = ingest(store, [mlruns])
    (result,) = [r for r in report.results if r.status == "ingested"]
    assert result.path == str(folder)
    run = store.run(result.run_id)
    assert (run.format, run.name) == ("mlflow", "tiny-gpt2")
    assert run.series["loss"].first_step == 2 and run.series["loss"].last_step == 16
    assert {"eval_loss", "lr", "grad_norm", "train_runtime"} <= set(run.series)
    # TrainingArguments and the model config arrive as text params, typed back for the shape.
    shape = run.shape
    assert (shape.micro_batch, shape.grad_accum, shape.n_layers, shape.hidden) == (4, 1, 2, 32)
    assert shape.fsdp is None and shape.optimizer == "adamw"
    assert store.details(run.id).config["mlflow"]["status"] == "FINISHED" and run.status == "finished"


@pytest.mark.slow
def test_system_metrics_are_placed_on_training_steps(mlruns):
    log = mlflow_dir.read(run_folder(mlruns))
    cpu = log.series["system/cpu_utilization_percentage"]
    loss = log.series["loss"]
    # Placed by wall time between the first and last logged step, not MLflow's sample counter.
    assert loss.steps.min() <= cpu.steps.min() and cpu.steps.max() <= loss.steps.max()
    assert np.all(np.diff(cpu.wall_time) >= 0)


def test_gpu_memory_megabytes_become_mem_used_gib(tmp_path, corpus):
    folder = tmp_path / "0" / "abc"
    shutil.copytree(corpus / CORPUS_RUN, folder)
    system = folder / "metrics" / "system"
    system.mkdir()
    # The lines MLflow's GPU monitor writes: pynvml's used bytes / 1e6, per sample counter.
    t0 = 1664364007000
    for gpu, mb in ((0, [40000.0, 61000.0]), (1, [39000.0, 72000.0])):
        lines = [f"{t0 + i * 10000} {v} {i}" for i, v in enumerate(mb)]
        (system / f"gpu_{gpu}_memory_usage_megabytes").write_text("\n".join(lines) + "\n")
    log = mlflow_dir.read(folder)
    assert log.series["mem_used_gib"].values.tolist() == pytest.approx(
        [40000e6 / 2**30, 72000e6 / 2**30])
    assert log.series["mem_used_gib/gpu1"].values[1] == pytest.approx(72000e6 / 2**30)


def test_a_grown_metric_file_appends(store, tmp_path, corpus):
    folder = tmp_path / "mlruns" / "0" / "run1"
    shutil.copytree(corpus / CORPUS_RUN, folder)
    first = ingest(store, [folder]).results[0]
    with open(folder / "metrics" / "loss", "a") as f:
        f.write("\n1664364008310 2.5 1\n1664364009310 nan 2\n")
    grown = ingest(store, [folder]).results[0]
    assert (grown.status, grown.run_id, grown.points) == ("updated", first.run_id, 2)
    values = store.series(first.run_id, "loss").values
    assert values[1] == 2.5 and np.isnan(values[2])


def test_a_malformed_metric_line_names_the_file(store, tmp_path, corpus):
    folder = tmp_path / "0" / "bad"
    shutil.copytree(corpus / CORPUS_RUN, folder)
    (folder / "metrics" / "loss").write_text("1664364007310 3.27 0\nnot a metric line at all\n")
    result = ingest(store, [folder]).results[0]
    assert result.status == "error" and result.reason.startswith("metrics/loss:")


def test_a_failed_run_says_so(tmp_path, corpus):
    folder = tmp_path / "0" / "failed"
    shutil.copytree(corpus / CORPUS_RUN, folder)
    meta = folder / "meta.yaml"
    meta.write_text(meta.read_text().replace("status: 1", "status: 4"))
    log = mlflow_dir.read(folder)
    assert log.config["mlflow"]["status"] == "FAILED"
    assert [(e.kind, e.data["status"]) for e in log.events] == [("exit", "FAILED")]
