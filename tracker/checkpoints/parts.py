"""Shared by every layout: which parts a checkpoint's keys hold, steps in names, sizes on disk."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.checkpoints import PARTS, Checkpoint
from core.metrics import canonical
from core.resume import STATE_KEYS
from core.status import CheckpointStatus
from tracker.checkpoints.inspect import FileInfo
from tracker.readers._common import number

# Top-level keys of hand-written torch.save dicts, by the part they hold (beyond STATE_KEYS).
KEYS = {
    **{part: set(names) for part, names in STATE_KEYS.items()},
    "rng": {"rng", "rng_state", "rng_states", "torch_rng_state", "cuda_rng_state", "random_state",
            "numpy_rng_state", "python_rng_state", "rng_tracker_states"},
    "trainer_state": {"step", "global_step", "global_steps", "iteration", "iter", "iter_num",
                      "epoch", "train_state", "loops"},
}
STEP_KEYS = ("global_step", "global_steps", "step", "iteration", "iter_num", "iter")
_STEP_IN_NAME = re.compile(
    r"(?<![a-z])(?:global_step|step|iteration|iter|it)[=_-]?(\d+)", re.IGNORECASE
)
_TRAILING_NUMBER = re.compile(r"[_-](\d+)$")
_EPOCH_IN_NAME = re.compile(r"epoch[=_-]?(\d+)", re.IGNORECASE)
_METRIC_IN_NAME = re.compile(r"([A-Za-z][\w/]*?)=(-?\d+(?:\.\d+)?(?:e-?\d+)?)")


def new(path: Path, kind: str) -> Checkpoint:
    return Checkpoint(path=str(path), kind=kind, has=dict.fromkeys(PARTS))


def parts_from_keys(keys: Iterable[str], value: dict[str, Any] | None = None) -> dict[str, bool]:
    """Which parts a state dict's top-level keys hold (a key whose value is None holds nothing)."""
    value = value or {}
    present = {k for k in keys if value.get(k, True) is not None}
    return {part: bool(present & KEYS[part]) for part in KEYS}


# Steps are stored as 64-bit integers; a larger one is no real step.
MAX_STEP = 2**63 - 1


def as_step(value: Any) -> int | None:
    """``value`` when it is a whole number a step can be (0 .. 2**63-1), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_STEP:
        return value
    return None


def step_from_value(value: dict[str, Any]) -> int | None:
    for key in STEP_KEYS:
        found = as_step(value.get(key))
        if found is not None:
            return found
    return None


def step_from_name(name: str, notes: list[str] | None = None) -> int | None:
    """The step a file or folder name states; one beyond 64 bits is noted in ``notes`` and dropped."""
    stem = name.split(".")[0] if "=" not in name else name.rsplit(".", 1)[0]
    match = _STEP_IN_NAME.search(stem) or _TRAILING_NUMBER.search(stem)
    if not match:
        return None
    digits = match.group(1)
    step = as_step(int(digits)) if len(digits) < 25 else None
    if step is None and notes is not None:
        notes.append(f"the step in the name ({digits[:24]}{'...' if len(digits) > 24 else ''}) "
                     "is beyond the 64-bit range: ignored")
    return step


def epoch_from_name(name: str) -> float | None:
    match = _EPOCH_IN_NAME.search(name)
    return float(match.group(1)) if match else None


def metrics_from_name(name: str) -> dict[str, float]:
    """Metric values Lightning writes into file names (``epoch=2-val_loss=0.52.ckpt``)."""
    stem = name.rsplit(".", 1)[0] if name.endswith((".ckpt", ".pt", ".pth")) else name
    out = {}
    for key, raw in _METRIC_IN_NAME.findall(stem):
        if key.lower() not in ("epoch", "step"):
            value = number(raw)
            if value is not None:
                out[canonical(key)] = value
    return out


def add_files(ckpt: Checkpoint, files: list[FileInfo]) -> None:
    """Size, write time, LFS status and warnings of the files a checkpoint is made of."""
    ckpt.size_bytes = sum(f.size for f in files)
    if files:
        newest = max(f.mtime for f in files)
        ckpt.written_at = datetime.fromtimestamp(newest, UTC)
    pointers = [f for f in files if f.format == "lfs"]
    if pointers:
        ckpt.status = CheckpointStatus.LFS
        stands_for = sum(f.lfs_size or 0 for f in pointers)
        ckpt.notes.append(f"{len(pointers)} Git-LFS pointer file(s) stand for "
                          f"{stands_for / 1024**3:.2f} GiB not fetched")
    for f in files:
        ckpt.warnings.extend(w for w in f.warnings() if w not in ckpt.warnings)
        ckpt.notes.extend(n for n in f.notes() if n not in ckpt.notes)


def walk_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` (symlinked files too, symlinked folders not followed)."""
    out = []
    for dirpath, _dirs, names in os.walk(folder):
        out.extend(Path(dirpath, n) for n in names)
    return sorted(out)
