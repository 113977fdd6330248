"""``LightningCallback``: a Lightning ``Callback`` that writes Headroom JSONL.

It writes ``headroom.jsonl`` into the trainer's log folder (``version_N/``, or
``path``): the run's shape from the trainer, the module and the optimizer; a
record every ``log_every_n_steps`` optimizer steps with what the module logged
since the previous record, the loss, learning rate and (on unsharded
strategies) the gradient norm, plus memory peaks, throughput and data volume;
the validation results; each checkpoint ``ModelCheckpoint`` writes; and a
summary, or the exception (``on_exception``) as the final event.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any

from core.metrics import canonical
from tracker.record.facts import batch_facts, model_facts, optimizer_name, precision
from tracker.record.recording import Recording
from tracker.record.writer import RUN_FILE

# Lightning's precision setting -> (autocast dtype, weights dtype it converts to).
PRECISIONS = {
    "16-mixed": ("fp16", None),
    "bf16-mixed": ("bf16", None),
    "32-true": (None, "fp32"),
    "bf16-true": (None, "bf16"),
    "16-true": (None, "fp16"),
    "transformer-engine": ("fp8", None),
}
# Strategies whose gradients are whole on every rank, so a local norm is the norm.
UNSHARDED = ("SingleDeviceStrategy", "DDPStrategy")


@functools.cache
def callback_class() -> type:
    """``LightningCallback`` on ``lightning.pytorch.Callback`` (or ``pytorch_lightning``'s)."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback

    cls = type("LightningCallback", (LightningHooks, Callback), {"__doc__": LightningHooks.__doc__})
    cls.__module__, cls.__qualname__ = "tracker.record", "LightningCallback"
    return cls


class LightningHooks:
    """Record a Lightning run to Headroom JSONL.

    Args:
        path: the log file; default ``<trainer.log_dir>/headroom.jsonl``.
        name: the run's name; default from the log folder (``lightning_logs/version_3``).
        shape: shape fields the objects cannot tell (``{"seq_len": 4096}``); they win.
        every: record every this many optimizer steps; default ``log_every_n_steps``.
        gather: combine memory peaks (max) and token counts (sum) over ranks at
            each record, one small collective; rank 0 writes either way.
        plan: the stamp of the exported plan this run follows (the lightning export
            passes it); default ``$HEADROOM_PLAN``.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        name: str | None = None,
        shape: dict[str, Any] | None = None,
        every: int | None = None,
        gather: bool = True,
        plan: str | None = None,
    ) -> None:
        self.path = path
        self.plan = plan
        self.name = name
        self.shape = dict(shape or {})
        self.every = every
        self.gather = gather
        self.recording: Recording | None = None
        self._seen: dict[str, Any] = {}  # metric -> the tensor last recorded for it
        self._steps = self._last_step = 0  # optimizer steps done, at the last record
        self._whole_grads = False
        self._grad_norm: Any = None
        self._val_started: float | None = None
        self._val_before: dict[str, Any] = {}
        self._last_eval: tuple[int, dict[str, Any]] = (-1, {})
        self._pending_save: int | None = None
        self._saved: set[tuple[str, int]] = set()  # (path, mtime) of checkpoints recorded

    def on_train_start(self, trainer, pl_module) -> None:
        log_dir = Path(trainer.log_dir or trainer.default_root_dir)
        run = Recording(
            self.path or log_dir / RUN_FILE,
            name=self.name or _run_name(log_dir),
            framework="lightning",
            by="LightningCallback",
            gather=self.gather,
            resume=trainer.global_step > 0,
        )
        facts, config = model_facts(pl_module)
        run.model = pl_module
        run.shape.update(_shape(trainer, facts))
        run.shape.update(self.shape)
        run.config.update(_config(trainer, pl_module), **config)
        run.link_plan(self.plan)
        self.every = self.every or max(1, trainer.log_every_n_steps)
        self._steps = self._last_step = trainer.global_step
        self._whole_grads = type(trainer.strategy).__name__ in UNSHARDED
        run.start(trainer.global_step)
        self.recording = run

    # The two per-step hooks count optimizer steps themselves: trainer.global_step
    # walks the loops and strategy, several times the cost of everything else here.

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        if self._open():
            self._steps += 1
            if self._whole_grads and self._steps % self.every == 0:
                self._grad_norm = _grad_norm(pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        run = self._open()
        if run is None:
            return
        run.count(*batch_facts(batch))
        if self._pending_save is not None:
            self._collect_checkpoints(trainer)
        run.step = self._steps
        if self._steps == self._last_step or self._steps % self.every:
            return  # still accumulating, or not a record step
        self._last_step = self._steps
        step = run.step = trainer.global_step
        metrics = self._fresh(trainer.logged_metrics)
        names = {canonical(k) for k in metrics}
        if "loss" not in names:
            metrics["loss"] = _loss(outputs, trainer, pl_module)
        if "grad_norm" not in names:
            metrics["grad_norm"] = self._grad_norm
        if trainer.optimizers:
            metrics["lr"] = trainer.optimizers[0].param_groups[0]["lr"]
        metrics["epoch"] = trainer.current_epoch
        self._grad_norm = None
        run.record(step, metrics)

    def on_validation_start(self, trainer, pl_module) -> None:
        if self._open() and not trainer.sanity_checking:
            self._val_started = time.perf_counter()
            self._val_before = dict(trainer.logged_metrics)

    def on_validation_end(self, trainer, pl_module) -> None:
        run = self._open()
        if run is None or self._val_started is None:
            return
        run.exclude(time.perf_counter() - self._val_started)
        self._val_started = None
        logged = trainer.logged_metrics
        metrics = {k: v for k, v in logged.items() if not _same(self._val_before.get(k), v)}
        self._seen.update(metrics)
        self._last_eval = (trainer.global_step, metrics)
        run.evaluate(trainer.global_step, metrics)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        if self._open():
            self._pending_save = (
                trainer.global_step
            )  # the path is known once the callback has saved

    def on_train_end(self, trainer, pl_module) -> None:
        run = self._open()
        if run is not None:
            self._collect_checkpoints(trainer)
            run.finish({})

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        run = self._open()
        if run is not None:
            self._collect_checkpoints(trainer)
            run.fail(exception)

    def _open(self) -> Recording | None:
        run = self.recording
        return run if run is not None and not run.finished else None

    def _fresh(self, logged: dict[str, Any]) -> dict[str, Any]:
        """What the module logged since the previous record (not older values Lightning keeps)."""
        fresh = {k: v for k, v in logged.items() if not _same(self._seen.get(k), v)}
        self._seen.update(fresh)
        return fresh

    def _collect_checkpoints(self, trainer) -> None:
        """Record the files ``ModelCheckpoint`` wrote since ``on_save_checkpoint`` fired."""
        if self._pending_save is None:
            return
        step, self._pending_save = self._pending_save, None
        eval_step, eval_metrics = self._last_eval
        for callback in trainer.checkpoint_callbacks:
            scores = getattr(callback, "best_k_models", {}) or {}
            for path in (getattr(callback, "last_model_path", ""), *scores):
                written = _written(path)
                if written is not None and written not in self._saved:
                    self._saved.add(written)  # last.ckpt is rewritten: each version counts
                    metrics = dict(eval_metrics) if eval_step == step else {}
                    if scores.get(path) is not None and callback.monitor:
                        metrics[callback.monitor] = scores[path]
                    self.recording.checkpoint(step, path, metrics)


def _written(path: str) -> tuple[str, int] | None:
    """(path, modification time) of a checkpoint file, or None when there is none."""
    try:
        return (path, os.stat(path).st_mtime_ns) if path else None
    except OSError:
        return None


def _same(before: Any, now: Any) -> bool:
    """True when ``now`` is the value already seen (Lightning hands out new views of it).

    The old tensor is kept alive by the caller, so a new value cannot reuse its memory.
    """
    if before is None:
        return False
    if hasattr(now, "data_ptr") and hasattr(before, "data_ptr"):
        return before.data_ptr() == now.data_ptr()
    return before is now


def _loss(outputs: Any, trainer, pl_module) -> Any:
    """The batch loss ``training_step`` returned (Lightning divides it by the accumulation)."""
    loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
    if loss is not None and pl_module.automatic_optimization:
        loss = loss * trainer.accumulate_grad_batches
    return loss


def _grad_norm(pl_module) -> Any:
    """The total L2 norm of the gradients, as a tensor (read at the record, not here)."""
    import torch

    grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
    return torch.nn.utils.get_total_norm(grads) if grads else None


def _shape(trainer, facts: dict[str, Any]) -> dict[str, Any]:
    amp, weights = PRECISIONS.get(str(trainer.precision), (None, None))
    shape = dict(facts)
    shape.update(
        precision=precision(amp, weights or facts.get("precision")),
        grad_accum=trainer.accumulate_grad_batches,
        **_strategy(trainer.strategy),
    )
    if trainer.optimizers:
        shape["optimizer"] = optimizer_name(trainer.optimizers[0])
    return {k: v for k, v in shape.items() if v is not None}


def _strategy(strategy) -> dict[str, Any]:
    """ZeRO stage (DeepSpeed) or sharding strategy (FSDP), and CPU offload."""
    kind = type(strategy).__name__
    if kind == "DeepSpeedStrategy":
        zero = (getattr(strategy, "config", None) or {}).get("zero_optimization") or {}
        offload = any(
            (zero.get(k) or {}).get("device") in ("cpu", "nvme")
            for k in ("offload_optimizer", "offload_param")
        )
        return {"zero_stage": zero.get("stage"), "cpu_offload": offload}
    if kind == "FSDPStrategy":
        sharding = getattr(strategy, "sharding_strategy", None)
        offload = getattr(getattr(strategy, "cpu_offload", None), "offload_params", False)
        return {
            "fsdp": sharding.name.lower() if sharding is not None else None,
            "cpu_offload": bool(offload),
        }
    return {}


def _config(trainer, pl_module) -> dict[str, Any]:
    config: dict[str, Any] = {"hparams": dict(getattr(pl_module, "hparams", {}) or {})}
    datamodule = getattr(trainer, "datamodule", None)
    if datamodule is not None and getattr(datamodule, "hparams", None):
        config["datamodule_hparams"] = dict(datamodule.hparams)
    config["trainer"] = {
        "max_steps": trainer.max_steps,
        "max_epochs": trainer.max_epochs,
        "precision": str(trainer.precision),
        "strategy": type(trainer.strategy).__name__,
        "num_devices": trainer.num_devices,
        "num_nodes": trainer.num_nodes,
        "accumulate_grad_batches": trainer.accumulate_grad_batches,
        "gradient_clip_val": trainer.gradient_clip_val,
        "log_every_n_steps": trainer.log_every_n_steps,
    }
    return config


def _run_name(log_dir: Path) -> str:
    """``lightning_logs/version_3`` rather than a bare ``version_3``."""
    if log_dir.name.startswith("version_") and log_dir.parent.name:
        return f"{log_dir.parent.name}/{log_dir.name}"
    return log_dir.resolve().name
