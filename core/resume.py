"""Which checkpoint to resume from, why, what it will get wrong, and the command to do it.

The default answer is the latest complete checkpoint: resuming from one without
optimizer, scheduler and RNG state makes the loss jump and the LR schedule
restart (the seed article's first trap). Restarting from the best instead is
the user's explicit choice. A checkpoint known to hold no model weights is never
recommended, whatever else it holds: there is nothing to resume from it, and
:func:`why_none` says so instead.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from core.checkpoints import Checkpoint, best, latest, value

# Keys of a plain torch.save dict, by what they hold, for the load lines of the command.
STATE_KEYS = {
    "model": ("model", "model_state_dict", "state_dict", "module", "net"),
    "optimizer": ("optimizer", "optimizer_state_dict", "optim", "opt"),
    "scheduler": ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched"),
    "scaler": ("scaler", "grad_scaler", "scaler_state_dict"),
}


@dataclass
class ResumeAdvice:
    """The recommended resume point, the reasons for it and its warnings."""

    checkpoint: Checkpoint
    command: str
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def recommend(
    checkpoints: Sequence[Checkpoint],
    metric: str | None = None,
    mode: str | None = None,
    from_best: bool = False,
) -> ResumeAdvice | None:
    """The checkpoint to resume from: the latest complete one, or the best when asked."""
    usable = [c for c in checkpoints if c.has.get("model") is not False]
    newest = latest(usable)
    if newest is None:
        return None
    if from_best:
        chosen, reasons = _best_choice(usable, metric, mode)
    else:
        chosen, reasons = _latest_choice(usable, newest)
    if chosen is None:
        return None
    return ResumeAdvice(chosen, command(chosen), reasons, chosen.resume_warnings())


def why_none(checkpoints: Sequence[Checkpoint]) -> str:
    """Why :func:`recommend` has no answer, in words."""
    if latest(checkpoints) is None:
        return "No checkpoint on disk to resume from."
    return "No checkpoint to resume from: none on disk holds the model weights."


def _latest_choice(checkpoints: Sequence[Checkpoint], newest: Checkpoint):
    complete = latest(checkpoints, complete=True)
    if complete is None:
        return newest, [f"no checkpoint holds everything a resume needs; {_name(newest)} is the "
                        "latest with model weights"]
    reasons = [f"latest complete checkpoint: {_name(complete)}"]
    if newest is not complete:
        lacks = ", ".join(newest.missing()) or "parts that could not be read"
        reasons.append(f"{_name(newest)} is newer but lacks {lacks}")
    return complete, reasons


def _best_choice(checkpoints: Sequence[Checkpoint], metric: str | None, mode: str | None):
    top = best([c for c in checkpoints if c.present], metric, mode)
    if top is None:
        return None, []
    reasons = [f"best by {metric} ({mode}): {value(top, metric):.4g} at {_name(top)}"]
    if top.complete is False:
        reasons.append("restarting from the best: the missing state is re-initialised")
    return top, reasons


def _name(c: Checkpoint) -> str:
    return f"step {c.step}" if c.step is not None else PurePath(c.path).name


def command(c: Checkpoint) -> str:
    """The framework's own way to resume from ``c``, ready to copy.

    Paths are quoted for where they land (``repr`` in Python, ``shlex.quote`` in
    a shell), so a folder named ``$(...)`` or ``"); ...`` stays a path.
    """
    path, parent = c.path, str(PurePath(c.path).parent)
    step = c.step if c.step is not None else "N"
    commands = {
        "hf": f"trainer.train(resume_from_checkpoint={path!r})",
        "lightning": f"trainer.fit(model, ckpt_path={path!r})",
        "deepspeed": f"engine.load_checkpoint({parent!r}, tag={PurePath(path).name!r})",
        "torchtitan": (f"--checkpoint.enable --checkpoint.folder {shlex.quote(parent)} "
                       f"--checkpoint.load_step {step}"),
        "megatron": f"--load {shlex.quote(parent)} --ckpt-step {step}",
        "dcp": f"torch.distributed.checkpoint.load(state_dict, checkpoint_id={path!r})",
    }
    return commands.get(c.kind) or _torch_command(c)


def _torch_command(c: Checkpoint) -> str:
    lines = [f"ckpt = torch.load({c.path!r}, map_location='cpu', weights_only=True)"]
    for part, names in STATE_KEYS.items():
        key = next((k for k in names if k in c.keys), None)
        if key is not None:
            target = "model" if part == "model" else part
            lines.append(f"{target}.load_state_dict(ckpt[{key!r}])")
    return "; ".join(lines)
