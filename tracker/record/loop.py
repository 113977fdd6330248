"""``Recorder``: Headroom JSONL from a plain training loop (PyTorch or anything else).

The loop calls ``step`` once per optimizer step; the recorder counts the
batch, and every ``every`` steps writes a record with the values passed at
that step plus what it measures itself (memory peaks since the previous
record, throughput, data volume). Values may be tensors: they are read only
at record steps, so the loop pays at most one device sync per record.
"""

from __future__ import annotations

import os
from typing import Any

from tracker.record.facts import batch_facts, model_facts, optimizer_name
from tracker.record.failure import ExceptHook
from tracker.record.recording import Recording


class Recorder:
    """Record a training loop; a context manager that records an exception on the way out.

    Args:
        path: the log file (``.jsonl``); put it in the run's own folder.
        name: the run's name; default the folder's name.
        shape: shape fields (``core.shape.RunShape`` names) the objects cannot
            tell, e.g. ``{"precision": "mixed-bf16", "seq_len": 2048}``; they win.
        config: the run's hyperparameters, stored with it.
        model: the model (``torch.nn.Module``): parameter counts, LoRA, quantisation,
            architecture when it has a HF config, and which GPUs to watch.
        optimizer: its class goes in the shape, and its learning rate is recorded
            when ``step`` is not given one.
        every: write a record every this many steps (the others are only counted):
            a record costs tens of microseconds, a step of a tiny model milliseconds.
        gather: combine memory peaks and token counts over ranks at each record.
            A collective: call ``step`` on every rank. Off by default, so a loop
            that calls ``step`` on rank 0 only cannot hang; rank 0 writes either way.
        resume: continue an existing log (a run resumed from a checkpoint)
            instead of keeping it aside and starting a new one.
        plan: the stamp of the exported plan this run follows (``headroom size
            --export`` writes it); default ``$HEADROOM_PLAN``.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None = None,
        shape: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
        model: Any | None = None,
        optimizer: Any | None = None,
        every: int = 10,
        gather: bool = False,
        resume: bool = False,
        plan: str | None = None,
    ) -> None:
        self.recording = run = Recording(
            path, name=name, framework="pytorch", by="Recorder", gather=gather, resume=resume
        )
        run.link_plan(plan)
        if model is not None:
            facts, model_config = model_facts(model)
            run.shape.update(facts)
            run.config.update(model_config)
            run.model = model
        if optimizer is not None:
            run.shape["optimizer"] = optimizer_name(optimizer)
        run.shape.update(shape or {})
        run.config.update(config or {})
        self.optimizer = optimizer
        self.every = max(1, every)
        self._hook = ExceptHook(run.fail)
        run.start()

    def step(
        self,
        step: int,
        *,
        loss: Any = None,
        lr: Any = None,
        batch: Any = None,
        batch_samples: int | None = None,
        batch_tokens: int | None = None,
        **metrics: Any,
    ) -> None:
        """Step ``step`` is done. ``batch`` (or the two counts) is what it consumed on this rank."""
        samples, tokens, seq_len = batch_facts(batch) if batch is not None else (None, None, None)
        samples, tokens = batch_samples or samples, batch_tokens or tokens
        if seq_len is None and tokens and samples:
            seq_len = tokens // samples
        self.recording.count(samples, tokens, seq_len)
        self.recording.step = step
        if step % self.every:
            return
        if lr is None and self.optimizer is not None:
            lr = self.optimizer.param_groups[0]["lr"]
        self.recording.record(step, {"loss": loss, "lr": lr, **metrics})

    def evaluate(self, step: int, **metrics: Any) -> None:
        """Evaluation results at ``step`` (``eval_loss=...``, ``eval_accuracy=...``)."""
        self.recording.evaluate(step, metrics)

    def checkpoint(self, step: int, path: str | os.PathLike, **metrics: Any) -> None:
        """A checkpoint written at ``step`` to ``path``, with the metrics it was saved with."""
        self.recording.checkpoint(step, path, metrics)

    def event(self, kind: str, message: str = "", step: int | None = None, **data: Any) -> None:
        """Something that happened (a resume, a data-loader restart, a NaN skip)."""
        self.recording.event(kind, message, step, **data)

    def close(self, **summary: Any) -> None:
        """The run finished: write its summary (your final figures plus the run-wide peaks)."""
        self.recording.finish(summary)
        self._hook.remove()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            self.close()
        else:
            self.recording.fail(exc)
            self._hook.remove()
        return False
