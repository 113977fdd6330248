"""Single-file checkpoints: Lightning ``.ckpt`` files and plain ``torch.save`` dicts.

A Lightning checkpoint holds ``state_dict``, ``optimizer_states``,
``lr_schedulers``, ``loops`` and the callbacks' state (ModelCheckpoint's
monitor, mode and best path), but never RNG state. A plain dict is read by its
keys (``model``, ``optimizer``, ``scheduler`` ...); a bare state dict is
weights only.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from core.checkpoints import Checkpoint
from core.metrics import canonical
from core.status import CheckpointStatus
from tracker.checkpoints.inspect import FileInfo, attrs, inspect_file, scalar, weights_kind
from tracker.checkpoints.parts import (
    add_files,
    as_step,
    epoch_from_name,
    metrics_from_name,
    new,
    parts_from_keys,
    step_from_name,
    step_from_value,
)

SUFFIXES = {".ckpt", ".pt", ".pth", ".bin", ".safetensors"}
# Parts of a model or checkpoint folder, not checkpoints on their own.
COMPONENTS = ("training_args.bin", "optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt",
              "rng_state", "model.safetensors", "model-0", "pytorch_model", "adapter_model",
              "tf_model", "flax_model", "common.pt")
LIGHTNING_KEYS = {"pytorch-lightning_version", "loops", "lr_schedulers", "optimizer_states"}


def is_checkpoint_file(path: Path) -> bool:
    return path.suffix in SUFFIXES and not path.name.startswith(COMPONENTS)


def read(path: Path) -> Checkpoint | None:
    """A checkpoint from one file, or None for a file that is no checkpoint at all.

    A ``.bin`` of raw token ids (nanoGPT's ``train.bin``) is neither a pickle,
    a torch zip nor safetensors. A symlink to another checkpoint is a link.
    """
    info = inspect_file(path)
    if info.format == "other":
        return None
    is_lightning = path.suffix == ".ckpt" and bool(LIGHTNING_KEYS & set(info.keys))
    ckpt = new(path, "lightning" if is_lightning else "torch")
    add_files(ckpt, [info])
    if info.format == "unreadable":
        ckpt.status = CheckpointStatus.UNREADABLE
    ckpt.step, ckpt.epoch = step_from_name(path.name, ckpt.notes), epoch_from_name(path.name)
    ckpt.metrics.update(metrics_from_name(path.name))
    if path.is_symlink() and os.path.exists(path):  # a loop is no link to anything
        ckpt.link_to = os.path.realpath(path)
        ckpt.size_bytes = 0
    if info.format == "safetensors" or info.tensor_names is not None:
        _weights_only(ckpt, info)
    elif info.readable:
        (_lightning if is_lightning else _plain)(ckpt, info.value)
    if is_lightning and ckpt.monitor:
        _monitored_score(ckpt, path, info.value)
    return ckpt


def _weights_only(ckpt: Checkpoint, info: FileInfo) -> None:
    ckpt.has = {part: part == "model" for part in ckpt.has}
    ckpt.weights = weights_kind(info.tensor_names)
    ckpt.notes.append("weights only")


def _plain(ckpt: Checkpoint, value: dict[str, Any]) -> None:
    ckpt.keys = [str(k) for k in value]
    ckpt.has.update(parts_from_keys(ckpt.keys, value))
    ckpt.has["scaler"] = ckpt.has["scaler"] or None  # absent is normal without fp16
    stated = step_from_value(value)
    ckpt.step = ckpt.step if stated is None else stated
    if as_step(value.get("epoch")) is not None or isinstance(value.get("epoch"), float):
        ckpt.epoch = float(value["epoch"])
    model = next((value[k] for k in ckpt.keys if k in ("model", "state_dict", "model_state_dict")),
                 None)
    if isinstance(model, dict):
        ckpt.weights = weights_kind([str(k) for k in model])


def _lightning(ckpt: Checkpoint, value: dict[str, Any]) -> None:
    keys = set(value)
    ckpt.keys = [str(k) for k in value]
    ckpt.has.update(
        model="state_dict" in keys, optimizer="optimizer_states" in keys,
        scheduler="lr_schedulers" in keys, trainer_state="loops" in keys,
        rng=False,  # Lightning never saves RNG state
        scaler=True if any("MixedPrecision" in str(k) or "scaler" in str(k) for k in keys)
        else None,
    )
    if as_step(value.get("global_step")) is not None:
        ckpt.step = value["global_step"]
    if as_step(value.get("epoch")) is not None:
        ckpt.epoch = float(value["epoch"])
    if isinstance(value.get("state_dict"), dict):
        ckpt.weights = weights_kind([str(k) for k in value["state_dict"]])
    if not ckpt.has["optimizer"]:
        ckpt.notes.append("saved with save_weights_only")
    _model_checkpoint_state(ckpt, value.get("callbacks"))


def _monitored_score(ckpt: Checkpoint, path: Path, value: dict[str, Any]) -> None:
    """ModelCheckpoint's ``current_score``: the monitored value when this file was saved."""
    for key, state in (value.get("callbacks") or {}).items():
        if str(key).startswith("ModelCheckpoint"):
            score = scalar(path, attrs(state).get("current_score"))
            if score is not None and math.isfinite(score):
                ckpt.metrics.setdefault(canonical(ckpt.monitor), score)
            return


def _model_checkpoint_state(ckpt: Checkpoint, callbacks: Any) -> None:
    """Monitor, mode and best path from the ModelCheckpoint callback's saved state."""
    if not isinstance(callbacks, dict):
        return
    for key, state in callbacks.items():
        state = attrs(state)
        if str(key).startswith("ModelCheckpoint") and state.get("monitor"):
            ckpt.monitor = str(state["monitor"])
            ckpt.monitor_mode = "max" if "'mode': 'max'" in str(key) else "min"
            best = state.get("best_model_path")
            ckpt.best_path = best if isinstance(best, str) and best else None
            return
