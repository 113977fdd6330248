"""Lightning log folders: the corpus, and a tiny model really trained with Lightning."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.producers import train_lightning
from tracker.ingest import ingest
from tracker.readers import ReaderError, Sample, best_reader
from tracker.readers import lightning as pl

LOGS = "lightning_logs"


# The corpus: every version folder ingests with the expected series, or says why not.


@pytest.mark.parametrize(
    ("run", "points", "first_step"),
    [
        ("0Xero7__slm_training/version_0", {"loss": 2814, "eval_loss": 10, "train_loss_epoch": 10}, 49),
        ("0Xero7__slm_training/version_12", {"loss": 641, "train_perplexity_step": 641}, 49),
        ("0Xero7__slm_training/version_5", {"loss": 1126, "eval_loss": 4}, 140749),  # resumed high
        ("BvoJa__GPTTT/version_0", {"loss": 10, "eval_loss": 2}, 49),
        ("LiuTaowen-Tony__xKV/version_0", {"loss": 2, "train_mae_step": 2}, 9),
        ("Melissasssss__TurnGPT/version_0", {"loss": 50, "epoch": 50}, 49),  # columns epoch,loss,step
    ],
)
def test_corpus_versions_ingest(corpus, store, run, points, first_step):
    project, version = run.split("/")
    report = ingest(store, [corpus / "lightning" / project / LOGS / version])
    assert [(r.status, r.format) for r in report.results] == [("ingested", "lightning")]
    stored = store.runs()[0]
    assert stored.name == run
    assert {name: stored.series[name].count for name in points} == points
    assert stored.series["loss"].first_step == first_step


def test_sparse_columns_keep_only_the_rows_that_have_a_value(corpus):
    run = pl.read(corpus / "lightning/BvoJa__GPTTT/lightning_logs/version_0")
    assert list(run.series["eval_loss"].steps) == [199, 399]
    assert run.series["eval_loss"].original == "val_loss"
    assert not np.isnan(run.series["loss"].values).any()


def test_empty_version_is_refused_with_the_reason(corpus, store):
    result = ingest(store, [corpus / "lightning/0Xero7__slm_training/lightning_logs/version_3"]).results[0]
    assert (result.status, result.format) == ("error", "lightning")
    assert result.reason == "no metrics: the folder holds only an empty hparams.yaml (the run stopped before logging)"


def test_whole_lightning_logs_folder(corpus, store):
    report = ingest(store, [corpus / "lightning/0Xero7__slm_training/lightning_logs"])
    assert sorted((r.path.rsplit("/", 1)[-1], r.status) for r in report.results) == [
        ("version_0", "ingested"), ("version_12", "ingested"), ("version_3", "error"),
        ("version_5", "ingested")]


def test_hparams_give_config_and_shape(corpus):
    run = pl.read(corpus / "lightning/0Xero7__slm_training/lightning_logs/version_0")
    assert run.config["d_model"] == 768
    assert (run.shape.n_layers, run.shape.hidden, run.shape.seq_len) == (12, 768, 128)
    assert run.shape.sources["seq_len"] == "hparams.yaml"
    nested = pl.read(corpus / "lightning/BvoJa__GPTTT/lightning_logs/version_0").shape
    assert (nested.micro_batch, nested.seq_len, nested.n_gpus) == (64, 256, 2)


def test_lightning_wins_the_sniff(corpus):
    for version in sorted((corpus / "lightning").glob("*/lightning_logs/version_*")):
        assert best_reader(version).name == "lightning", version
        if (version / "metrics.csv").is_file():
            assert best_reader(version / "metrics.csv").name == "lightning", version


# A tiny model trained with Lightning, logging through CSVLogger and TensorBoardLogger.


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("pl") / "tinylm"
    return train_lightning(root, steps=30, loggers=("csv", "tb"))


def _csv_column(version, name):
    with open(version / "metrics.csv", newline="") as f:
        return [(int(r["step"]), float(r[name])) for r in csv.DictReader(f) if r[name]]


def test_both_loggers_merge_into_one_run_without_duplicates(trained, store):
    report = ingest(store, [trained])
    assert [(r.status, r.format) for r in report.results] == [("ingested", "lightning")]
    run = store.runs()[0]
    assert run.name == "tinylm/version_0"
    assert sorted(run.series) == ["epoch", "eval_loss", "loss", "lr", "train_loss_epoch"]
    for name, column in (("loss", "train_loss_step"), ("eval_loss", "val_loss"), ("lr", "lr-AdamW")):
        stored = store.series(run.id, name)
        logged = _csv_column(trained, column)
        assert list(stored.steps) == [s for s, _ in logged]
        np.testing.assert_allclose(stored.values, [v for _, v in logged], rtol=1e-6)
        assert stored.wall_time is not None  # taken from the TensorBoard copy
    assert run.shape.micro_batch == 4 and run.shape.seq_len == 16 and run.shape.hidden == 16
    assert run.shape.framework == "lightning" and run.started_at is not None


def test_csv_logger_alone(trained, tmp_path):
    version = tmp_path / "csv_only" / LOGS / "version_0"
    shutil.copytree(trained, version, ignore=shutil.ignore_patterns("events.*", "checkpoints"))
    run = pl.read(version)
    assert len(run.series["loss"]) == len(_csv_column(trained, "train_loss_step"))
    assert run.series["loss"].wall_time is None
    assert list(run.series["lr"].values[:2]) == [0.01, 0.01]


def test_tensorboard_logger_alone_is_still_a_lightning_run(trained, tmp_path):
    version = tmp_path / "tb_only" / LOGS / "version_0"
    shutil.copytree(trained, version, ignore=shutil.ignore_patterns("metrics.csv", "checkpoints"))
    assert best_reader(version).name == "lightning"
    run = pl.read(version)
    assert len(run.series["loss"]) == len(_csv_column(trained, "train_loss_step"))
    assert "hp_metric" not in run.series  # Lightning's -1 placeholder for the hparams tab
    assert run.config["batch_size"] == 4


def test_metrics_csv_growing_between_ingests(trained, tmp_path, store):
    version = tmp_path / LOGS / "version_0"
    version.mkdir(parents=True)
    lines = (trained / "metrics.csv").read_text().splitlines(keepends=True)
    (version / "metrics.csv").write_text("".join(lines[:8]))
    first = ingest(store, [version]).results[0]
    (version / "metrics.csv").write_text("".join(lines))
    second = ingest(store, [version]).results[0]
    assert first.status == "ingested" and second.status == "updated"
    assert store.runs()[0].series["loss"].count == len(_csv_column(trained, "train_loss_step"))


def test_header_without_rows(tmp_path):
    version = tmp_path / "version_0"
    version.mkdir()
    (version / "metrics.csv").write_text("epoch,step,train_loss\n")
    with pytest.raises(ReaderError, match="no metrics"):
        pl.read(version)


def test_plain_metrics_csv_is_left_to_the_generic_reader(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.9\n")
    assert pl.sniff(Sample(tmp_path / "metrics.csv")) == 0.0 and pl.sniff(Sample(tmp_path)) == 0.0
    (tmp_path / "hparams.yaml").write_text("lr: 0.1\n")  # ... unless Lightning's files are beside it
    assert pl.sniff(Sample(tmp_path / "metrics.csv")) == 0.9 and pl.sniff(Sample(tmp_path)) == 0.95


def test_a_run_is_named_after_its_version_and_project_or_after_its_own_folder():
    assert pl.run_name(Path("/w/tinylm/lightning_logs/version_3")) == "tinylm/version_3"
    assert pl.run_name(Path("/w/logs/sweep-a/version_0")) == "sweep-a/version_0"
    assert pl.run_name(Path("/w/samples/lightning-tiny-lm")) == "lightning-tiny-lm"  # the user's name
