"""Which checkpoints are provably a run's own: the only ones retention may delete.

A run's folder is its own when a framework laid it out (an HF output folder,
a Lightning ``version_N``, a Headroom recorder's folder ...); the folder of a
lone log file is not, since it may be a home folder full of other work. A
checkpoint is the run's when its real path, every symlink resolved, lies under
that folder (or, beside a lone log, when the log itself names it), and no other
stored run lists it too. Folders a config names outside the run and anything
reached through a symlink out of it are only listed.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

from core.checkpoints import Checkpoint
from tracker.checkpoints.discover import RUN_LOGS, run_folder
from tracker.db import checkpoints as rows
from tracker.db.unit import Unit

OUTSIDE = "outside the run: never deleted here"
# Files and folders that only a training framework's own run folder holds.
RUN_FILES = RUN_LOGS | {"latest", "latest_checkpointed_iteration.txt", "checkpoints",
                        "lightning_logs"}
_RUN_ENTRY = re.compile(r"^(checkpoint-\d+|global_step\d+|iter_\d{7}|step-\d+)$")
_LIGHTNING_VERSION = re.compile(r"^version_\d+$")


def run_root(source: Path) -> Path | None:
    """The run's own folder, or None when nothing shows the log's folder belongs to one run."""
    folder = run_folder(source)
    if source.is_dir() or folder != Path(os.path.abspath(source)).parent:
        return folder  # a folder a reader claimed whole, or the one above an HF checkpoint-N
    return folder if _laid_out(folder) else None


def _laid_out(folder: Path) -> bool:
    if _LIGHTNING_VERSION.match(folder.name):
        return True
    try:
        names = [e.name for e in os.scandir(folder)]
    except OSError:
        return False
    return any(n in RUN_FILES or _RUN_ENTRY.match(n) for n in names)


def shown_path(path: str) -> str:
    """The path as it really is: symlinks resolved (a link itself keeps its own name)."""
    if os.path.islink(path):
        return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    return os.path.realpath(path)


def is_inside(path: str, folder: Path) -> bool:
    """``path`` (already real) lies under the real ``folder``."""
    root = os.path.realpath(folder)
    return os.path.commonpath([root, path]) == root and path != root


def refusal(ckpt: Checkpoint, source: Path) -> str | None:
    """Why ``ckpt`` (with its real path) is not provably the run's, or None when it is."""
    root = run_root(source)
    if root is not None and is_inside(ckpt.path, root):
        return None
    if root is None and ckpt.logged and is_inside(ckpt.path, Path(os.path.abspath(source)).parent):
        return None  # the lone log itself names it, beside it
    return OUTSIDE


def claimed(unit: Unit, run_id: int, paths: list[str]) -> dict[str, str]:
    """Real path -> why it stays: another stored run lists the same checkpoint."""
    others: dict[str, set[int]] = defaultdict(set)
    for path, other in rows.others_listing(unit, run_id):
        others[shown_path(path)].add(other)
    out = {}
    for path in paths:
        ids = sorted(others.get(path, ()))
        if ids:
            runs = f"run {ids[0]} claims" if len(ids) == 1 else f"runs {', '.join(map(str, ids))} claim"
            out[path] = f"{runs} it too: never deleted here"
    return out
