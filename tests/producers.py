"""Real logs made by really running the libraries on a tiny model on the CPU.

Tests use these instead of hand-written fixtures, so a reader is pinned to
what the library actually writes. Each producer takes a few seconds.
"""

from __future__ import annotations

import math
from pathlib import Path


def tiny_gpt2_config(vocab: int = 64, layers: int = 2, hidden: int = 32, heads: int = 2,
                     positions: int = 64):
    from transformers import GPT2Config

    return GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=hidden, n_layer=layers,
                      n_head=heads, bos_token_id=0, eos_token_id=0)


def token_dataset(n: int, seq: int = 16, vocab: int = 64, seed: int = 0):
    """A list of {"input_ids", "labels"} dicts of a learnable repeating pattern."""
    import torch

    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        start = int(torch.randint(0, vocab, (1,), generator=g))
        ids = (torch.arange(seq) * 3 + start) % vocab
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def train_hf(out_dir: Path, steps: int = 24, eval_steps: int = 8, save_steps: int = 8,
             lr: float = 5e-3, callbacks: list | None = None, resume: Path | None = None,
             **args) -> Path:
    """Train a tiny GPT-2 with the HF Trainer (eval, checkpoints, best model); returns out_dir.

    ``resume`` continues from that checkpoint folder, as ``trainer.train(resume_from_checkpoint=)``.
    """
    import torch
    from transformers import GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(tiny_gpt2_config())
    options = dict(
        output_dir=str(out_dir), max_steps=steps, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, learning_rate=lr, logging_steps=2,
        eval_strategy="steps", eval_steps=eval_steps, save_steps=save_steps,
        save_total_limit=None, load_best_model_at_end=True, metric_for_best_model="eval_loss",
        report_to=[], use_cpu=True, disable_tqdm=True, seed=0, dataloader_num_workers=0,
    )
    options.update(args)
    trainer = Trainer(model=model, args=TrainingArguments(**options),
                      train_dataset=token_dataset(64), eval_dataset=token_dataset(16, seed=1),
                      callbacks=callbacks)
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    trainer.save_state()
    trainer.save_metrics("train", trainer.state.log_history[-1])
    return out_dir


def write_summary_writer(
    log_dir: Path, steps: int = 40, eval_every: int = 10, nan_at: int | None = None,
    restart_at: int | None = None, extra_steps: int = 10,
) -> dict[str, list[tuple[int, float]]]:
    """Log with ``torch.utils.tensorboard.SummaryWriter``; returns every point written, per tag.

    Tags: ``train/loss`` and ``train/learning_rate`` each step, ``eval/loss`` every
    ``eval_every`` steps, ``max_memory_allocated`` in bytes. ``nan_at`` makes that
    step's loss NaN. ``restart_at`` resumes the run with a second writer (so a
    second event file), going back to that step and logging ``extra_steps`` more.
    """
    from torch.utils.tensorboard import SummaryWriter

    written: dict[str, list[tuple[int, float]]] = {}
    ranges = [range(steps)]
    if restart_at is not None:
        ranges.append(range(restart_at, restart_at + extra_steps))
    for attempt, span in enumerate(ranges):
        writer = SummaryWriter(log_dir=str(log_dir))
        for step in span:
            loss = math.nan if step == nan_at else 4.0 / (1 + step) + 0.01 * attempt
            points = {"train/loss": loss, "train/learning_rate": 1e-3 * (1 - step / 1000),
                      "max_memory_allocated": float((2 + step % 3) * 2**30)}
            if step % eval_every == 0:
                points["eval/loss"] = loss + 0.1
            for tag, value in points.items():
                writer.add_scalar(tag, value, step)
                written.setdefault(tag, []).append((step, value))
        writer.close()
    return written


def train_lightning(
    root: Path, steps: int = 30, loggers: tuple[str, ...] = ("csv", "tb"), val_every: int = 10,
    log_every: int = 5, ckpt_path: str | None = None, callbacks: tuple = (),
    own_folders: bool = False, **trainer_args,
) -> Path:
    """Train a tiny language model with Lightning on the CPU; returns its ``version_N`` folder.

    Stable for other tests to build on. Logs ``train_loss`` on step and epoch,
    ``val_loss`` every ``val_every`` steps, ``lr-AdamW`` (``LearningRateMonitor``)
    through ``CSVLogger`` and/or ``TensorBoardLogger`` (``loggers``) into
    ``root/lightning_logs/version_N``; saves hparams (batch_size, seq_len, hidden_size,
    n_layers, vocab_size, lr) and checkpoints with ``ModelCheckpoint(monitor="val_loss",
    save_top_k=2, save_last=True)`` into ``version_N/checkpoints``. ``ckpt_path``
    resumes from a checkpoint (Lightning then logs into a new version folder).
    ``callbacks`` are added after those. ``own_folders`` lets each logger write into a
    folder of its own (``root/csv_logs/version_0``, ``root/tb_logs/version_0``), as two
    loggers do unless told otherwise.
    """
    import lightning as L
    from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
    from torch.utils.data import DataLoader

    L.seed_everything(0, verbose=False)
    kinds = {"csv": CSVLogger, "tb": TensorBoardLogger}
    if own_folders:
        writers = [kinds[k](save_dir=str(root), name=f"{k}_logs") for k in loggers]
    else:
        first = kinds[loggers[0]](save_dir=str(root), name="lightning_logs")
        # Each logger picks its own next version; pin them to one folder, as users do.
        writers = [first] + [kinds[k](save_dir=str(root), name="lightning_logs",
                                      version=first.version) for k in loggers[1:]]
    trainer = L.Trainer(
        max_steps=steps, accelerator="cpu", devices=1, log_every_n_steps=log_every,
        val_check_interval=val_every, check_val_every_n_epoch=None, enable_progress_bar=False,
        enable_model_summary=False,
        logger=writers,
        callbacks=[LearningRateMonitor(logging_interval="step"),
                   ModelCheckpoint(monitor="val_loss", save_top_k=2, save_last=True), *callbacks],
        **trainer_args,
    )
    model = _tiny_lightning_lm()
    batches = DataLoader(token_dataset(64), batch_size=4, shuffle=True)
    val = DataLoader(token_dataset(16, seed=1), batch_size=4)
    trainer.fit(model, batches, val, ckpt_path=ckpt_path)
    return Path(trainer.loggers[0].log_dir)


def _tiny_lightning_lm():
    import lightning as L
    import torch
    from torch import nn

    class TinyLM(L.LightningModule):
        def __init__(self, vocab_size: int = 64, hidden_size: int = 16, n_layers: int = 1,
                     seq_len: int = 16, batch_size: int = 4, lr: float = 1e-2) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.embed = nn.Embedding(vocab_size, hidden_size)
            self.head = nn.Linear(hidden_size, vocab_size)

        def _loss(self, batch) -> torch.Tensor:
            ids = batch["input_ids"]
            logits = self.head(self.embed(ids[:, :-1]))
            return nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                               ids[:, 1:].reshape(-1))

        def training_step(self, batch, _):
            loss = self._loss(batch)
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch, _):
            self.log("val_loss", self._loss(batch))

        def configure_optimizers(self):
            optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    return TinyLM()


def paced(seconds: float):
    """A Trainer callback that makes each step last at least ``seconds`` (for samplers on timers)."""
    import time

    from transformers import TrainerCallback

    class Paced(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.monotonic()

        def on_step_end(self, args, state, control, **kwargs):
            time.sleep(max(0.0, seconds - (time.monotonic() - self.started)))

    return Paced()


def train_hf_reporting(out_dir: Path, tracker: str, steps: int = 16) -> Path:
    """:func:`train_hf` with the Trainer reporting to W&B (offline) or MLflow (file store).

    Runs in a subprocess: both libraries keep process-wide state (W&B's service,
    MLflow's active run) and sample system metrics on background threads. W&B
    writes ``out_dir/wandb/``, MLflow ``out_dir/mlruns/``; both sample system
    metrics every second, and each step is paced to last 0.2 s so that even a
    short run spans several samples (a tiny model alone finishes in under one).
    """
    import os
    import subprocess
    import sys

    env = {
        **os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(out_dir),
        "WANDB_CONFIG_DIR": str(out_dir / ".config"), "WANDB_CACHE_DIR": str(out_dir / ".cache"),
        "WANDB_PROJECT": "headroom-tests", "WANDB_X_STATS_SAMPLING_INTERVAL": "1",
        "MLFLOW_TRACKING_URI": (out_dir / "mlruns").as_uri(), "MLFLOW_ALLOW_FILE_STORE": "true",
        "MLFLOW_EXPERIMENT_NAME": "headroom-tests", "MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING": "true",
        "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL": "1",
        "MLFLOW_SYSTEM_METRICS_SAMPLES_BEFORE_LOGGING": "1",
    }
    code = (
        "import sys; from pathlib import Path; from tests.producers import paced, train_hf; "
        f"train_hf(Path(sys.argv[1]) / 'hf', steps={steps}, report_to=[{tracker!r}], "
        "run_name='tiny-gpt2', save_steps=1000, load_best_model_at_end=False, "
        "callbacks=[paced(0.2)])"
    )
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code, str(out_dir)], cwd=root, env=env, check=True,
                   timeout=600, capture_output=True)
    return out_dir


def write_tensor_scalars(log_dir: Path, steps: int = 20, tag: str = "loss") -> list[tuple[int, float]]:
    """Scalars as TF2's ``tf.summary.scalar`` writes them: tensors of the ``scalars`` plugin.

    Written with tensorboard's own event writer and protos (no TensorFlow);
    like TF2, the plugin metadata goes with a tag's first value only.
    """
    import numpy as np
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.plugins.scalar import metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(log_dir))
    written = []
    for step in range(steps):
        value = 1.0 / (step + 1)
        summary = Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(np.float32(value)))
        if step == 0:
            summary.metadata.CopyFrom(metadata.create_summary_metadata(tag, ""))
        writer.add_event(Event(wall_time=1.7e9 + step, step=step, summary=Summary(value=[summary])))
        written.append((step, value))
    writer.close()
    return written


class RecordedLoop:
    """A real training loop (linear regression, plain SGD) written by ``Recorder`` a step at a
    time: :meth:`train` more steps whenever the test wants the log to grow, then :meth:`finish`
    (the summary record) or :meth:`crash` (an exception recorded as the last line). A large
    ``lr`` makes the loss diverge to Inf."""

    def __init__(self, folder: Path, name: str, lr: float = 0.05) -> None:
        import torch

        from tracker.record import Recorder

        torch.manual_seed(0)
        self.torch = torch
        self.model = torch.nn.Linear(1, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.x = torch.randn(64, 1)
        folder.mkdir(parents=True, exist_ok=True)
        self.recorder = Recorder(folder / "headroom.jsonl", name=name, model=self.model,
                                 optimizer=self.optimizer, every=1)
        self.done = 0

    def train(self, steps: int) -> None:
        for _ in range(steps):
            self.done += 1
            loss = ((self.model(self.x) - 3 * self.x) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.recorder.step(self.done, loss=loss.detach())

    def finish(self) -> None:
        self.recorder.__exit__(None, None, None)

    def crash(self) -> None:
        try:
            raise RuntimeError("loss exploded")
        except RuntimeError as err:
            self.recorder.__exit__(type(err), err, err.__traceback__)
