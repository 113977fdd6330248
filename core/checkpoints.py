"""Checkpoints as data, and which one is best and which is latest.

A :class:`Checkpoint` says where a checkpoint is, what it holds (model weights,
optimizer, scheduler, RNG, grad scaler, trainer state: each True, False or None
when unknown) and the run's metrics at its step. The tracker finds and inspects
the files; the functions here only decide, so the app, the command line and the
tests ask the same questions the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from core.metrics import canonical
from core.runlog import Series
from core.status import CheckpointStatus

PARTS = ("model", "optimizer", "scheduler", "rng", "scaler", "trainer_state")
# What a resume cannot do without: the rest (RNG, scaler) only changes the details.
REQUIRED = ("model", "optimizer", "scheduler", "trainer_state")
# Files present, though Git-LFS pointers stand in for the large ones.
PRESENT = (CheckpointStatus.OK, CheckpointStatus.LFS)

# What goes wrong when a part is missing (the seed article's two resume traps, and the rest).
MISSING_WARNINGS = {
    "model": "model weights missing: there is nothing to resume from",
    "optimizer": "optimizer state missing: loss will rebound and Adam's moments restart",
    "scheduler": "scheduler missing: LR will restart at warm-up",
    "rng": "RNG missing: data order will differ",
    "scaler": "grad scaler missing: the fp16 loss scale restarts low (expect skipped steps)",
    "trainer_state": "trainer state missing: the step count and epoch restart at 0",
}
ADAPTER_WARNING = "adapter-only: base model must match"
LFS_WARNING = "files are Git-LFS pointers: run `git lfs pull` before resuming"

# Training loss at a checkpoint is the mean of this many logged points up to its step.
LOSS_WINDOW = 10


@dataclass
class Checkpoint:
    """One checkpoint of a run, as found on disk or as a log mentions it."""

    path: str
    step: int | None = None
    # Framework layout: hf, lightning, torch, deepspeed, torchtitan, dcp, megatron.
    kind: str = "unknown"
    status: CheckpointStatus = CheckpointStatus.OK
    has: dict[str, bool | None] = field(default_factory=lambda: dict.fromkeys(PARTS))
    weights: str | None = None  # "full" or "adapter" when known
    epoch: float | None = None
    size_bytes: int | None = None
    written_at: datetime | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    # Step each metric was taken at (an eval at or before the checkpoint's step).
    metric_steps: dict[str, int] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # top-level keys of a single-file checkpoint
    warnings: list[str] = field(default_factory=list)  # what inspection found
    notes: list[str] = field(default_factory=list)
    logged: bool = False  # a log of the run names it
    named_best: bool = False  # the framework itself called it best
    link_to: str | None = None  # a symlink to another checkpoint (Lightning save_last="link")
    # The metric and mode the framework ranked its checkpoints by (Lightning monitor, HF
    # metric_for_best_model), when the checkpoint says.
    monitor: str | None = None
    monitor_mode: str | None = None
    # The checkpoint this one's saved state names as best (HF best_model_checkpoint,
    # Lightning best_model_path), as written, possibly on another machine.
    best_path: str | None = None

    @property
    def present(self) -> bool:
        return self.status in PRESENT

    @property
    def complete(self) -> bool | None:
        """Holds everything a resume needs; None when that cannot be told."""
        if not self.present:
            return None
        required = [self.has.get(part) for part in REQUIRED]
        if any(value is False for value in required):
            return False
        return None if any(value is None for value in required) else True

    def missing(self) -> list[str]:
        """Parts known to be absent."""
        return [part for part in PARTS if self.has.get(part) is False]

    def resume_warnings(self) -> list[str]:
        """What resuming from this checkpoint would get wrong, in words."""
        out = [MISSING_WARNINGS[part] for part in self.missing()]
        if self.weights == "adapter":
            out.append(ADAPTER_WARNING)
        if self.status == CheckpointStatus.LFS:
            out.append(LFS_WARNING)
        return out + [w for w in self.warnings if w not in out]


# Metric direction: words that mean lower is better, or higher is better.
_LOWER = {"loss", "losses", "perplexity", "ppl", "error", "err", "wer", "cer", "ter", "mse", "mae",
          "rmse", "nll", "bpc", "bpb", "bpd", "distance", "fid", "kl", "entropy", "mape"}
_HIGHER = {"acc", "accuracy", "f", "bleu", "rouge", "rougel", "rougelsum",
           "precision", "recall", "auc", "auroc", "map", "iou", "miou", "dice", "reward",
           "rewards", "exact", "em", "top", "pass", "meteor", "chrf", "spearman",
           "pearson", "correlation", "mcc", "psnr", "ssim", "bertscore", "win", "winrate"}
_WORDS = re.compile(r"[a-z]+")


def metric_mode(name: str) -> str | None:
    """"min" or "max" for a metric name, or None when the name does not say."""
    words = set(_WORDS.findall(name.lower()))
    lower, higher = bool(words & _LOWER), bool(words & _HIGHER)
    if lower == higher:
        return None
    return "min" if lower else "max"


@dataclass(frozen=True)
class Choice:
    """The metric and mode to rank by, and why, or what the user must choose."""

    metric: str | None
    mode: str | None
    note: str = ""


def choose_metric(
    checkpoints: Iterable[Checkpoint],
    metric: str | None = None,
    mode: str | None = None,
    stated: tuple[str | None, str | None] = (None, None),
) -> Choice:
    """The user's metric and mode, else the framework's (``stated``), else eval loss.

    Falls back to the smoothed training loss when no checkpoint has an eval
    metric. A mode the name does not reveal is left None, with a note asking.
    """
    present = {name for c in checkpoints for name in c.metrics}
    stated_metric = canonical(stated[0]) if stated[0] else None
    note = ""
    if metric:
        metric = canonical(metric)
    elif stated_metric:
        metric, note = stated_metric, "the metric the training run itself ranked by"
    elif "eval_loss" in present:
        metric = "eval_loss"
    elif "loss" in present:
        metric, note = "loss", "no eval metric at the checkpoints: best by smoothed training loss"
    else:
        return Choice(None, None, "no checkpoint has a metric to rank by")
    if mode is None and metric == stated_metric:
        mode = stated[1]
    mode = mode or metric_mode(metric)
    if mode is None:
        note = f"is a higher or a lower {metric} better? choose the mode (min or max)"
    return Choice(metric, mode, note)


def value(checkpoint: Checkpoint, metric: str | None) -> float | None:
    found = checkpoint.metrics.get(metric) if metric else None
    return found if isinstance(found, (int, float)) and math.isfinite(found) else None


def ranked(
    checkpoints: Iterable[Checkpoint], metric: str | None, mode: str | None
) -> list[Checkpoint]:
    """Checkpoints with a value for ``metric``, best first (ties: the later step first)."""
    if metric is None or mode not in ("min", "max"):
        return []
    scored = [c for c in checkpoints if c.link_to is None and c.status != CheckpointStatus.DELETED
              and value(c, metric) is not None]
    sign = 1.0 if mode == "min" else -1.0
    return sorted(scored, key=lambda c: (sign * value(c, metric), -(c.step or 0)))


def best(
    checkpoints: Iterable[Checkpoint], metric: str | None, mode: str | None
) -> Checkpoint | None:
    found = ranked(checkpoints, metric, mode)
    return found[0] if found else None


def newest_first(checkpoints: Iterable[Checkpoint]) -> list[Checkpoint]:
    """Present, real (not linked) checkpoints, the latest first: by step, then write time."""
    real = [c for c in checkpoints if c.present and c.link_to is None]
    return sorted(real, key=_age, reverse=True)


def _age(c: Checkpoint) -> tuple[bool, int, float]:
    written = c.written_at.timestamp() if c.written_at else 0.0
    return (c.step is not None, c.step or 0, written)


def latest(checkpoints: Iterable[Checkpoint], complete: bool = False) -> Checkpoint | None:
    """The newest checkpoint on disk (``complete``: the newest that can be resumed)."""
    for c in newest_first(checkpoints):
        if not complete or c.complete:
            return c
    return None


def is_eval_metric(name: str) -> bool:
    """Evaluation results, not the evaluation's own speed."""
    if not name.startswith(("eval_", "eval/")):
        return False
    return not name.endswith(("runtime", "_per_second", "per_second"))


def metrics_at(series: Mapping[str, Series], step: int) -> tuple[dict[str, float], dict[str, int]]:
    """The run's metrics at a checkpoint's step, and the step each was taken at.

    Training loss is the mean of the last LOSS_WINDOW logged values up to the
    step (one noisy batch says little); eval metrics are the last evaluation at
    or before the step.
    """
    values: dict[str, float] = {}
    steps: dict[str, int] = {}
    for name, s in series.items():
        if name != "loss" and not is_eval_metric(name):
            continue
        found = _up_to(s, step, LOSS_WINDOW if name == "loss" else 1)
        if found is not None:
            values[name], steps[name] = found
    return values, steps


def _up_to(s: Series, step: int, window: int) -> tuple[float, int] | None:
    # A mask rather than a binary search: resumed runs log some steps twice, out of order.
    index = np.flatnonzero((s.steps <= step) & np.isfinite(s.values))[-window:]
    if len(index) == 0:
        return None
    return float(s.values[index].mean()), int(s.steps[index[-1]])
