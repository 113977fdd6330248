"""Which checkpoint a run resumed from, as its logs and config state it.

HF ``resume_from_checkpoint`` (in the config or ``training_args.bin``),
Lightning ``ckpt_path``, Megatron ``--load``, torchtitan
``checkpoint.initial_load_path`` and "resume" events name it. The path is
matched to a stored checkpoint (by its tail when written on another machine),
so the run links to the run that wrote it and the plot can mark the boundary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from core.runlog import RunEvent
from tracker.checkpoints.discover import locate, run_folder
from tracker.checkpoints.inspect import attrs, inspect_file
from tracker.db import checkpoints as rows
from tracker.db import runs as run_store
from tracker.db.unit import Unit
from tracker.readers._common import flatten

RESUME_KEYS = ("resume_from_checkpoint", "ckpt_path", "resume_from", "resume_from_ckpt", "load",
               "initial_load_path", "load_checkpoint")
EVENT_KEYS = ("checkpoint", "path", "from")
# Values that name a choice, not a path (Lightning ckpt_path="last", HF resume=True).
NOT_PATHS = {"", "last", "best", "hpc", "registry", "true", "false", "none", "null"}


@dataclass
class Lineage:
    """Where a run came from and which runs came from it."""

    run_id: int
    resumed_from: str | None = None
    parent_run: int | None = None
    parent_step: int | None = None  # the resume boundary on the plot
    children: list[int] = field(default_factory=list)


def detect(source: Path, config: dict, events: Iterable[RunEvent]) -> str | None:
    """The checkpoint path a run says it resumed from, as written."""
    for event in events:
        if event.kind == "resume":
            found = next((event.data[k] for k in EVENT_KEYS if _is_path(event.data.get(k))), None)
            if found:
                return str(found)
    flat = flatten(config)
    for key, value in flat.items():
        if key.rsplit(".", 1)[-1] in RESUME_KEYS and _is_path(value):
            return value
    return _from_training_args(run_folder(source))


def _from_training_args(root: Path) -> str | None:
    """HF saves the arguments with the model and in every checkpoint; the first one says."""
    saved = [root / "training_args.bin", *sorted(root.glob("checkpoint-*/training_args.bin"))]
    args = next((p for p in saved if p.is_file()), None)
    if args is None:
        return None
    value = attrs(inspect_file(args).value).get("resume_from_checkpoint")
    return value if _is_path(value) else None


def _is_path(value) -> bool:
    return isinstance(value, str) and value.strip().lower() not in NOT_PATHS


def update_lineage(unit: Unit, run_id: int, source: Path, config: dict,
                   events: Iterable[RunEvent]) -> None:
    """Fill the run's ``resumed_from`` from what it states; a value already set is kept."""
    run = run_store.get(unit, run_id)
    if run is None or run.resumed_from:
        return
    written = detect(source, config, events)
    if written:
        run_store.update(unit, run_id, resumed_from=match(unit, written, run_folder(source)))


def match(unit: Unit, written: str, root: Path) -> str:
    """The stored checkpoint a written path means: here, or the one path with its tail."""
    local = locate(written, root, anywhere=True)
    if local is not None:
        return str(local)
    parts = Path(written).parts
    for k in (3, 2, 1):
        if len(parts) > k:
            found = rows.paths_ending(unit, "/".join(parts[-k:]))
            if len(found) == 1:
                return found[0]
    return written


def lineage(unit: Unit, run_id: int) -> Lineage:
    """The run's parent checkpoint (and its run and step) and the runs resumed from its own."""
    run = run_store.get(unit, run_id)
    out = Lineage(run_id, run.resumed_from if run else None)
    if out.resumed_from:
        owner = rows.owners(unit, [out.resumed_from]).get(out.resumed_from)
        if owner is not None:
            out.parent_run, out.parent_step = owner
    own = {c.path for c in rows.load(unit, run_id)}
    out.children = sorted({rid for path, ids in rows.resumed_from(unit).items() if path in own
                           for rid in ids if rid != run_id})
    return out

