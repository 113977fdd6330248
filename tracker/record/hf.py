"""``HFCallback``: a transformers ``TrainerCallback`` that writes Headroom JSONL.

It writes ``headroom.jsonl`` into the Trainer's output folder (or ``path``):
the run's shape from ``TrainingArguments``, the model and the optimizer; a
record per logging step with HF's loss, learning rate and grad norm plus
memory peaks, throughput and data volume; evaluations; each checkpoint; and a
summary or, when an uncaught exception ends the process, the exception as the
final event (the Trainer has no exception hook, so ``sys.excepthook`` is chained
while training runs).

Tokens and samples are counted by a forward pre-hook on the model that reads
the shape of ``input_ids`` (no tensor data, so no device sync). When HF counts
tokens itself (``include_num_input_tokens_seen``) its count is used.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from tracker.record.facts import batch_facts, model_facts, optimizer_name, precision
from tracker.record.failure import ExceptHook
from tracker.record.recording import Recording
from tracker.record.writer import RUN_FILE

# Keys only HF's end-of-training log has.
SUMMARY_KEYS = {"train_loss", "total_flos"}
FSDP_STRATEGIES = ("full_shard", "shard_grad_op", "hybrid_shard", "hybrid_shard_zero2", "no_shard")


@functools.cache
def callback_class() -> type:
    """``HFCallback``: the hooks below on top of transformers' ``TrainerCallback``."""
    from transformers import TrainerCallback

    cls = type("HFCallback", (HFHooks, TrainerCallback), {"__doc__": HFHooks.__doc__})
    cls.__module__, cls.__qualname__ = "tracker.record", "HFCallback"
    return cls


class HFHooks:
    """Record a HF Trainer run to Headroom JSONL.

    Args:
        path: the log file; default ``<output_dir>/headroom.jsonl``.
        name: the run's name; default ``run_name`` or the output folder's name.
        shape: shape fields the objects cannot tell (``{"seq_len": 4096}``); they win.
        gather: combine memory peaks (max) and token counts (sum) over ranks at
            each record, one small collective; rank 0 writes either way.
        plan: the stamp of the exported plan this run follows; default the one in
            ``run_name`` (``plan-<stamp>``, as the hf export sets it), the DeepSpeed
            config's ``headroom_plan``, else ``$HEADROOM_PLAN``.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        name: str | None = None,
        shape: dict[str, Any] | None = None,
        gather: bool = True,
        plan: str | None = None,
    ) -> None:
        self.path = path
        self.plan = plan
        self.name = name
        self.shape = dict(shape or {})
        self.gather = gather
        self.recording: Recording | None = None
        self._summary: dict[str, Any] = {}
        self._handles: list[Any] = []

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        run = self.recording
        if run is not None and not run.finished:
            # auto_find_batch_size restarts the loop after an OOM with a smaller batch.
            batch = _batch(args, state)
            run.shape.update(batch)  # reaches the header unless a record was written already
            run.event(
                "restart",
                f"training restarted with micro batch {batch['micro_batch']}",
                micro_batch=batch["micro_batch"],
            )
            run.start(state.global_step, state.num_input_tokens_seen or 0)
            return
        run = Recording(
            self.path or Path(args.output_dir) / RUN_FILE,
            name=self.name or _run_name(args),
            framework="transformers",
            by="HFCallback",
            gather=self.gather,
            resume=state.global_step > 0,
        )
        facts, config = model_facts(model) if model is not None else ({}, {})
        run.model = model
        run.shape.update(_shape(args, state, facts, optimizer))
        run.shape.update(self.shape)
        run.config.update(training_args=args.to_dict(), **config)
        run.link_plan(self.plan, *_plan_fields(args))
        if model is not None:
            self._handles.append(model.register_forward_pre_hook(self._count, with_kwargs=True))
        self._handles.append(ExceptHook(run.fail))
        run.start(state.global_step, state.num_input_tokens_seen or 0)
        self.recording, self._summary = run, {}

    def on_log(self, args, state, control, logs=None, **kwargs):
        run = self.recording
        if run is None or run.finished or not logs:
            return
        logs = dict(logs)
        if SUMMARY_KEYS & logs.keys():
            self._summary.update(logs)
        elif any(key.startswith("eval_") for key in logs):
            logs.pop("epoch", None)  # the training record at this step has it
            run.exclude(float(logs.get("eval_runtime") or 0.0))
            run.evaluate(state.global_step, logs)
        else:
            tokens = logs.pop("num_input_tokens_seen", None)
            run.record(state.global_step, logs, tokens_seen=int(tokens) if tokens else None)

    def on_step_end(self, args, state, control, **kwargs):
        if self.recording is not None:
            self.recording.step = state.global_step  # where a crash happened

    def on_save(self, args, state, control, **kwargs):
        run = self.recording
        if run is None or run.finished:
            return
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        step = state.global_step
        path = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{step}"
        run.checkpoint(step, path, _metrics_at(state.log_history, step))

    def on_train_end(self, args, state, control, **kwargs):
        run = self.recording
        if run is None or run.finished:
            return
        best = {
            "best_metric": state.best_metric,
            "best_global_step": getattr(state, "best_global_step", None),
        }
        run.finish({**self._summary, **best})
        self._release()

    def _count(self, module, args, kwargs) -> None:
        if module.training and self.recording is not None:
            self.recording.count(*batch_facts(kwargs or args))

    def _release(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def _shape(args, state, facts: dict[str, Any], optimizer) -> dict[str, Any]:
    """Shape fields from the arguments, the model's facts and the optimizer."""
    facts = {**facts, **_batch(args, state)}
    amp = "bf16" if args.bf16 else "fp16" if args.fp16 else None
    facts.update(
        precision=precision(amp, facts.get("precision")),
        optimizer=optimizer_name(optimizer),
        **_sharding(args),
    )
    if getattr(args, "activation_checkpointing", None) or getattr(
        args, "gradient_checkpointing", None
    ):
        facts["recompute"] = "full"  # transformers 5 renamed the argument
    return {k: v for k, v in facts.items() if v is not None}


def _batch(args, state) -> dict[str, int]:
    """Micro batch per device, accumulation and global batch.

    ``state.train_batch_size`` follows auto_find_batch_size and spans the GPUs
    of single-process DataParallel.
    """
    gpus = max(1, args.n_gpu)
    micro = max(1, (state.train_batch_size or args.per_device_train_batch_size * gpus) // gpus)
    accum = args.gradient_accumulation_steps
    return {
        "micro_batch": micro,
        "grad_accum": accum,
        "global_batch": micro * accum * args.world_size * gpus,
    }


def _sharding(args) -> dict[str, Any]:
    """ZeRO stage or FSDP strategy, and whether anything is offloaded to the CPU."""
    ds = getattr(args, "hf_deepspeed_config", None)
    if ds is not None:
        zero = ds.config.get("zero_optimization") or {}
        offload = any(
            (zero.get(k) or {}).get("device") in ("cpu", "nvme")
            for k in ("offload_optimizer", "offload_param")
        )
        return {"zero_stage": zero.get("stage"), "cpu_offload": offload}
    fsdp = getattr(args, "fsdp", None)
    if not fsdp:
        return {}
    options: list[str] = []
    if isinstance(fsdp, str):
        options = fsdp.split()
    elif isinstance(fsdp, (list, tuple)):  # transformers 4: a list of FSDPOption
        options = [str(getattr(o, "value", o)) for o in fsdp]
    config = args.fsdp_config if isinstance(getattr(args, "fsdp_config", None), dict) else {}
    strategy = next((o for o in options if o in FSDP_STRATEGIES), None)
    if strategy is None:  # transformers 5: FSDP2, resharding says full vs grad-op sharding
        reshard = str(config.get("reshard_after_forward", True)).lower()
        strategy = "full_shard" if reshard in ("true", "full_shard") else "shard_grad_op"
    return {
        "fsdp": strategy,
        "cpu_offload": "offload" in options or bool(config.get("cpu_offload")),
    }


def _plan_fields(args) -> tuple[Any, ...]:
    """Where an exported config leaves its plan's stamp: ``run_name`` and DeepSpeed's config."""
    name = args.run_name if str(args.run_name or "").startswith("plan-") else None
    ds = getattr(args, "hf_deepspeed_config", None)
    return name, ds.config.get("headroom_plan") if ds is not None else None


def _metrics_at(history: list[dict[str, Any]], step: int) -> dict[str, Any]:
    """The loss and evaluation results HF logged at ``step``: what the checkpoint was saved with."""
    metrics: dict[str, Any] = {}
    for entry in history:
        if entry.get("step") == step and not SUMMARY_KEYS & entry.keys():
            metrics.update({k: v for k, v in entry.items() if _describes_model(k)})
    return metrics


def _describes_model(key: str) -> bool:
    """Loss, epoch and evaluation results; not the optimizer state or how fast eval ran."""
    if key.startswith("eval_"):
        return not key.endswith(("_runtime", "_per_second"))
    return key in ("loss", "epoch")


def _run_name(args) -> str:
    output = Path(args.output_dir)
    if args.run_name and args.run_name != args.output_dir:
        return args.run_name
    return output.resolve().name
