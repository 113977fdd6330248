"""LightningCallback on real Lightning runs of a tiny language model on the CPU, and a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.producers import train_lightning
from tracker.ingest import ingest
from tracker.record import LightningCallback

pytestmark = pytest.mark.slow

STEPS, LOG_EVERY, VAL_EVERY = 30, 5, 10
THROUGHPUT = {"step_time_s", "samples_per_s", "tokens_per_s", "samples_seen", "tokens_seen"}


def records(path: Path, key: str) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if key in r]


@pytest.fixture(scope="module")
def version_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pl")
    return train_lightning(
        root,
        steps=STEPS,
        log_every=LOG_EVERY,
        val_every=VAL_EVERY,
        callbacks=(LightningCallback(),),
    )


def test_a_lightning_run_ingests_with_every_field(store, version_dir):
    report = ingest(store, [version_dir])
    assert [(r.status, r.format) for r in report.results] == [("ingested", "headroom_jsonl")]
    run = store.run(report.results[0].run_id)
    assert run.status == "finished" and run.name == "lightning_logs/version_0"
    assert {"loss", "lr", "grad_norm", "epoch", "eval_loss", "batch_size", *THROUGHPUT} <= set(
        run.series
    )
    assert not {"mem_peak_gib", "mem_reserved_gib"} & set(run.series)  # no GPU: absent, not zero
    loss = store.series(run.id, "loss")
    assert loss.original == "train_loss_step"  # what the module logged, not a second loss
    assert loss.steps.tolist() == list(range(LOG_EVERY, STEPS + 1, LOG_EVERY))
    # StepLR halves the rate every 10 steps; the recorder reads it from the optimizer.
    assert store.series(run.id, "lr").values.tolist() == pytest.approx(
        [1e-2, 5e-3, 5e-3, 2.5e-3, 2.5e-3, 1.25e-3]
    )
    assert store.series(run.id, "tokens_seen").values[-1] == STEPS * 4 * 16
    assert set(store.series(run.id, "batch_size").values) == {4}


def test_logged_values_are_recorded_once_not_repeated(store, version_dir):
    """Lightning keeps old values in logged_metrics; each must appear only when it was logged."""
    run_id = store.run(ingest(store, [version_dir]).results[0].run_id).id
    assert store.series(run_id, "eval_loss").steps.tolist() == [10, 20, 30]
    epoch_loss = store.series(run_id, "train_loss_epoch")
    assert epoch_loss.steps.tolist() == [20]  # epoch 0 ended at step 16; the next record is 20


def test_the_header_states_the_shape(store, version_dir):
    run = store.run(ingest(store, [version_dir]).results[0].run_id)
    n_params = 64 * 16 + 16 * 64 + 64
    shape = run.shape
    assert (shape.n_params, shape.n_trainable_params, shape.method) == (n_params, n_params, "full")
    assert (shape.micro_batch, shape.grad_accum, shape.global_batch, shape.seq_len) == (4, 1, 4, 16)
    assert (shape.precision, shape.optimizer, shape.framework) == ("fp32", "adamw", "lightning")
    config = store.details(run.id).config
    assert config["hparams"]["hidden_size"] == 16 and config["trainer"]["log_every_n_steps"] == 5


def test_checkpoints_are_recorded_with_their_score(version_dir):
    log = version_dir / "headroom.jsonl"
    saved = [(r["step"], r["checkpoint"]["path"]) for r in records(log, "checkpoint")]
    # Every file ModelCheckpoint left, and the ones top-k rotation deleted since.
    on_disk = {f"checkpoints/{p.name}" for p in (version_dir / "checkpoints").iterdir()}
    assert on_disk <= {path for _, path in saved}
    assert [s for s, path in saved if path == "checkpoints/last.ckpt"] == [10, 20, 30]
    evals = {r["step"]: r["val_loss"] for r in records(log, "val_loss") if "step" in r}
    for r in records(log, "checkpoint"):
        assert r["checkpoint"]["metrics"]["val_loss"] == pytest.approx(evals[r["step"]])


def test_an_oom_in_training_is_the_final_event(store, tmp_path):
    import lightning as L
    import torch

    class Boom(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if trainer.global_step == 7:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")

    with pytest.raises(torch.OutOfMemoryError):
        train_lightning(tmp_path, steps=STEPS, callbacks=(LightningCallback(), Boom()))
    log = next(tmp_path.rglob("headroom.jsonl"))
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["step"], last["event"]["kind"]) == (7, "oom")
    run = store.run(ingest(store, [log.parent]).results[0].run_id)
    assert run.status == "crashed" and run.series["loss"].last_step == 5


def test_the_callback_survives_pickling():
    """ddp_spawn and deepcopy-ing trainers pickle callbacks; the lazily built class must resolve."""
    import pickle

    import lightning as L

    clone = pickle.loads(pickle.dumps(LightningCallback(every=3)))
    assert isinstance(clone, L.Callback) and type(clone) is LightningCallback and clone.every == 3
