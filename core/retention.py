"""Which checkpoints to keep and which could go: the best k and the latest n, and never more.

Keeping only the latest loses the best (the seed article's second trap), so
the plan always keeps the best, the latest complete checkpoint (the resume
point), the one the framework itself called best, and any checkpoint another
run resumed from, whatever k and n say. The plan only proposes; deleting is
the tracker's job and needs the user's confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.checkpoints import Checkpoint, latest, newest_first, ranked
from core.status import CheckpointStatus


class RetentionError(ValueError):
    """A plan that cannot be made safely (no way to tell the best)."""


@dataclass
class RetentionPlan:
    """Checkpoints to keep (each with its reasons) and those that could be deleted."""

    keep: list[tuple[Checkpoint, list[str]]] = field(default_factory=list)
    delete: list[Checkpoint] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return sum(c.size_bytes or 0 for c in self.delete)


def plan(
    checkpoints: Sequence[Checkpoint],
    keep_best: int,
    keep_latest: int,
    metric: str | None,
    mode: str | None,
    protected: Mapping[str, str] | None = None,
) -> RetentionPlan:
    """Keep the best ``keep_best`` by ``metric``/``mode`` and the latest ``keep_latest``.

    ``protected`` maps paths to a reason they must stay (another run resumed
    from them). With ``keep_best`` 0 the best is still kept when it can be told.
    Only checkpoints whose files are here are planned; Git-LFS
    pointers, missing and deleted ones free nothing and are left out.
    """
    if keep_best < 0 or keep_latest < 0:
        raise RetentionError("keep counts cannot be negative")
    top = ranked(checkpoints, metric, mode)
    if not top and keep_best > 0 and any(c.status == CheckpointStatus.OK for c in checkpoints):
        raise RetentionError(f"no checkpoint has a value for {metric or 'the metric'} "
                             f"({mode or 'mode unknown'}), so none can be called best; "
                             "choose a metric and mode first")
    reasons = _reasons(checkpoints, top, keep_best, keep_latest, metric, protected or {})
    result = RetentionPlan()
    for c in newest_first(checkpoints) + [c for c in checkpoints if c.link_to]:
        if c.status != CheckpointStatus.OK:
            continue
        why = reasons.get(c.path, [])
        if why:
            result.keep.append((c, why))
        else:
            result.delete.append(c)
    return result


def _reasons(
    checkpoints: Sequence[Checkpoint], top: list[Checkpoint], keep_best: int, keep_latest: int,
    metric: str | None, protected: Mapping[str, str],
) -> dict[str, list[str]]:
    reasons: dict[str, list[str]] = {}

    def add(c: Checkpoint | None, why: str) -> None:
        if c is not None:
            reasons.setdefault(c.path, []).append(why)

    for rank, c in enumerate(top[: max(keep_best, 1)], start=1):
        add(c, f"best by {metric}" if rank == 1 else f"best {keep_best} by {metric} (#{rank})")
    for rank, c in enumerate(newest_first(checkpoints)[:keep_latest], start=1):
        add(c, "latest" if rank == 1 else f"latest {keep_latest} (#{rank})")
    add(latest(checkpoints, complete=True), "latest complete checkpoint (the resume point)")
    for c in checkpoints:
        if c.named_best:
            add(c, "the training framework's own best checkpoint")
        if c.path in protected:
            add(c, protected[c.path])
        if c.step is None and c.link_to is None:
            add(c, "step unknown: cannot be ranked")
        if c.link_to is not None:
            add(c, f"a link to {c.link_to}")
            add(next((t for t in checkpoints if t.path == c.link_to), None),
                f"target of the link {c.path}")
    return reasons
