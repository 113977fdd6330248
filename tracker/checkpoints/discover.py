"""Where a run's checkpoints are: on disk beside its logs, and wherever its logs say.

The walk starts at the run folder (the log's folder, or above an HF
``checkpoint-N/``) and at folders the run's config names (``output_dir``,
Lightning ``dirpath`` ...), a few levels deep, never into another run's own
folder. Each folder or file is offered to the layouts in turn. Checkpoints the logs name (HF
``best_model_checkpoint``, a Headroom JSONL checkpoint line) are matched to
what was found; paths written on another machine
(``/kaggle/working/outputs/checkpoint-3765``) match by their tail, and one
whose files are gone is listed as missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from core.checkpoints import Checkpoint
from core.runlog import CheckpointRef
from core.status import CheckpointStatus
from tracker.checkpoints import files, folders
from tracker.checkpoints.parts import as_step, new, step_from_name
from tracker.readers._common import flatten
from tracker.record.writer import RUN_FILE

MAX_DEPTH = 3
# Folders entered per walk at most: a run folder is not a home directory.
MAX_FOLDERS = 2000
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "wandb", "mlruns", "venv"}
# Files at the top of one training run's own folder (an HF Trainer output folder, a Lightning
# version_N, a Headroom recorder's folder): a walk from another run's folder does not enter it,
# since what it holds is that run's (a log dropped in a folder of past runs would take them all).
RUN_LOGS = frozenset({RUN_FILE, "trainer_state.json", "hparams.yaml"})
# Config keys that name where checkpoints were written or came from.
CONFIG_FOLDERS = ("output_dir", "dirpath", "save", "save_dir", "checkpoint_dir", "ckpt_dir",
                  "checkpoint.folder", "default_root_dir")
CONFIG_REFS = ("best_model_checkpoint",)

_HF = re.compile(r"^checkpoint-\d+$")
_DEEPSPEED = re.compile(r"^global_step\d+$")
_MEGATRON = re.compile(r"^iter_\d{7}$")
_DCP_STEP = re.compile(r"^step[-_]\d+$")

Reader = Callable[[Path], Checkpoint | None]


def run_folder(source: Path) -> Path:
    """The folder a run's checkpoints live under: the log's folder, or above its ``checkpoint-N``.

    It never climbs higher on a guess: a parent folder may hold other runs.
    """
    folder = Path(os.path.abspath(source if source.is_dir() else source.parent))
    return folder.parent if _HF.match(folder.name) else folder


def layout(path: Path) -> Reader | None:
    """The reader for a checkpoint folder or file, or None when ``path`` is not one."""
    if path.is_dir():
        if _HF.match(path.name):
            return folders.hf
        if _DEEPSPEED.match(path.name) and (path.parent / "latest").is_file():
            return folders.deepspeed
        if _MEGATRON.match(path.name) or (path.name == "release" and _megatron_tracker(path)):
            return folders.megatron
        if (path / ".metadata").is_file() or _DCP_STEP.match(path.name):
            return folders.dcp
        return None
    return files.read if files.is_checkpoint_file(path) else None


def _megatron_tracker(path: Path) -> bool:
    return (path.parent / "latest_checkpointed_iteration.txt").is_file()


def find(roots: Iterable[Path]) -> list[Checkpoint]:
    """Every checkpoint under ``roots``, each once."""
    found: dict[str, Checkpoint] = {}
    budget = [MAX_FOLDERS]
    for root in roots:
        if root.is_dir():
            _walk(root, 0, found, budget)
    return list(found.values())


def _walk(folder: Path, depth: int, found: dict[str, Checkpoint], budget: list[int]) -> None:
    budget[0] -= 1
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    if depth and any(entry.name in RUN_LOGS for entry in entries):
        return
    for entry in entries:
        path = Path(entry.path)
        if not _utf8(entry.name):
            _add_undecodable(found, path)
            continue
        reader = layout(path)
        if reader is not None:
            ckpt = found.get(str(path)) or inspect_one(reader, path)
            if ckpt is not None:
                found[str(path)] = ckpt
        elif (entry.is_dir(follow_symlinks=False) and depth < MAX_DEPTH and budget[0] > 0
              and not entry.name.startswith(".") and entry.name not in SKIP_DIRS):
            _walk(path, depth + 1, found, budget)


def inspect_one(reader: Reader, path: Path) -> Checkpoint | None:
    """``reader(path)``; whatever goes wrong becomes this checkpoint's one-line warning."""
    try:
        return reader(path)
    except Exception as err:  # one hostile file must not cost the run its other checkpoints
        ckpt = new(path, _kind_from_name(path))
        ckpt.status = CheckpointStatus.UNREADABLE
        first = str(err).splitlines()[0][:160] if str(err) else ""
        ckpt.warnings.append(f"{path.name}: could not be inspected ({type(err).__name__}"
                             f"{': ' + first if first else ''})")
        return ckpt


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes, kept by Python as lone surrogates
        return False
    return True


def _add_undecodable(found: dict[str, Checkpoint], path: Path) -> None:
    """A checkpoint-like name that is not UTF-8 is listed (escaped), never inspected or deleted."""
    folder_like = (_HF, _DEEPSPEED, _MEGATRON, _DCP_STEP)
    if path.suffix not in files.SUFFIXES and not any(p.match(path.name) for p in folder_like):
        return
    shown = os.fsencode(path).decode("utf-8", errors="backslashreplace")
    ckpt = new(Path(shown), _kind_from_name(path))
    ckpt.status = CheckpointStatus.UNREADABLE
    ckpt.warnings.append(f"{Path(shown).name}: the file name is not valid UTF-8; rename it to "
                         "inspect or delete it here")
    found[shown] = ckpt


def roots(source: Path, config: dict) -> list[Path]:
    """The run folder, and the folders its config says checkpoints went to."""
    root = run_folder(source)
    out = [root]
    flat = flatten(config)
    for key in CONFIG_FOLDERS:
        named = flat.get(key)
        if isinstance(named, str) and named:
            local = Path(os.path.normpath(root / named))  # an absolute path stays as it is
            if local.is_dir() and local not in out:
                out.append(local)
    return out


def locate(written: str, root: Path, anywhere: bool = False) -> Path | None:
    """A path as a log wrote it, here: relative to the run folder, or matched by its tail.

    A tail under the run folder wins over the written absolute path (the run
    folder was moved or copied since); tails never match outside the run
    folder, so a path from another machine never finds a sibling run's files.
    An existing path outside the run folder counts only ``anywhere``.
    """
    path = Path(os.path.normpath(root / written))  # an absolute path stays as it is
    if path.exists() and path.is_relative_to(root):
        return path
    parts = Path(os.path.normpath(written)).parts
    for k in range(len(parts) - 1, 0, -1):
        candidate = root.joinpath(*parts[-k:])
        if candidate.exists():
            return candidate
    return path if anywhere and path.exists() else None


def discover(source: Path, config: dict, refs: Iterable[CheckpointRef]) -> list[Checkpoint]:
    """The run's checkpoints, on disk and named by its logs, ordered by step."""
    base = run_folder(source)
    found = {c.path: c for c in find(roots(source, config))}
    flat = flatten(config)
    named = [CheckpointRef(None, flat[k]) for k in CONFIG_REFS if isinstance(flat.get(k), str)]
    for ref in list(refs) + named:
        _add_ref(found, ref, base)
    best = _named_best(list(found.values()), named)
    if best is not None and _key(best, base, found) in found:
        found[_key(best, base, found)].named_best = True
    return sorted(found.values(), key=lambda c: (c.step is None, c.step or 0, c.path))


def _named_best(found: list[Checkpoint], named: list[CheckpointRef]) -> str | None:
    """The framework's last word on its best: the final state's, else the newest checkpoint's."""
    if named:
        return named[0].path
    stating = [c for c in found if c.best_path]
    return max(stating, key=lambda c: c.step or 0).best_path if stating else None


def _key(written: str, base: Path, found: dict[str, Checkpoint]) -> str:
    """Where a written path is here; for one that is nowhere here, where it would be.

    A checkpoint found in a folder the config names keeps its absolute path, and
    so does a missing one under the run folder (a path Headroom stored itself);
    another machine's absolute path would be in the run folder by its name.
    """
    local = locate(written, base)
    if local is not None:
        return str(local)
    if written in found:
        return written
    path = Path(written)
    if not path.is_absolute():
        return str(Path(os.path.normpath(base / path)))
    return str(path if path.is_relative_to(base) else base / path.name)


def _add_ref(found: dict[str, Checkpoint], ref: CheckpointRef, base: Path) -> None:
    if not ref.path:
        return
    key = _key(ref.path, base, found)
    ckpt = found.get(key)
    if ckpt is None:
        here = Path(key).exists() and Path(key).is_relative_to(base)  # deeper than the walk
        reader = layout(Path(key)) if here else None
        ckpt = (inspect_one(reader, Path(key)) if reader else None) or _missing(key, ref)
        found[key] = ckpt
    ckpt.logged = True
    ckpt.metrics.update({k: v for k, v in ref.metrics.items() if isinstance(v, (int, float))})
    if ckpt.step is None:
        ckpt.step = as_step(ref.step)


def _missing(path: str, ref: CheckpointRef) -> Checkpoint:
    ckpt = new(Path(path), _kind_from_name(Path(path)))
    ckpt.status = CheckpointStatus.MISSING
    ckpt.step = as_step(ref.step) if ref.step is not None else step_from_name(Path(path).name)
    ckpt.notes.append(f"named by the run's logs as {ref.path}; the files are not here")
    return ckpt


def _kind_from_name(path: Path) -> str:
    if _HF.match(path.name):
        return "hf"
    if path.suffix == ".ckpt":
        return "lightning"
    return "torch" if path.suffix in files.SUFFIXES else "unknown"
