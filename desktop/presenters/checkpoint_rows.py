"""What the checkpoints panel says: one row per checkpoint, the resume advice, the lineage.

Built from the checkpoint manager's report (best, latest, resume point), so the
panel never decides anything itself: it shows the same answers as
``headroom checkpoints``, in words and icons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING

from core.checkpoints import Checkpoint, is_eval_metric, metric_mode
from core.metrics import size_text
from core.resume import ResumeAdvice, why_none
from desktop.presenters import formatting as fmt
from tracker.checkpoints.inspect import UNKNOWN

if TYPE_CHECKING:  # the manager and lineage load the ORM: the window shows first
    from tracker.checkpoints.lineage import Lineage
    from tracker.checkpoints.manager import Report

# Column title and what the part is, for the completeness icons.
PART_NAMES: dict[str, tuple[str, str]] = {
    "model": ("Model", "model weights"),
    "optimizer": ("Optim", "optimizer state (Adam's moments)"),
    "scheduler": ("Sched", "LR scheduler state"),
    "rng": ("RNG", "random number generator state (data order, dropout)"),
    "scaler": ("Scaler", "grad scaler (the fp16 loss scale)"),
    "trainer_state": ("State", "trainer state (step, epoch, best checkpoint)"),
}
STATUS_TEXT = {"ok": "present", "lfs": "LFS pointer", "missing": "missing", "deleted": "deleted",
               "unreadable": "unreadable", "logged": "named in log", "unsafe": "unsafe to inspect"}
STATUS_TIPS = {
    "ok": "The files are on disk.",
    "lfs": "The files are Git-LFS pointers: run `git lfs pull` to fetch them.",
    "missing": "The run's log names this checkpoint but its files are gone.",
    "deleted": "Moved to the system trash by a retention plan.",
    "unreadable": "The files could not be read (damaged or cut short while saving).",
    "logged": "The log names this checkpoint; no scan has looked for it yet.",
    "unsafe": "Parts of it could only be opened by running code stored in the file, so "
              "Headroom did not open them: their contents are unknown.",
}
MODES = {"min": "lower is better", "max": "higher is better"}


@dataclass(frozen=True)
class CheckpointItem:
    """One checkpoint as the table shows it."""

    checkpoint: Checkpoint
    best: bool = False
    latest: bool = False
    resume: bool = False

    @property
    def name(self) -> str:
        return PurePath(self.checkpoint.path).name

    @property
    def status(self) -> str:
        """present, LFS pointer, missing, deleted, unreadable, or unsafe to inspect."""
        c = self.checkpoint
        key = "unsafe" if c.status == "ok" and unsafe(c) else c.status
        return STATUS_TEXT.get(key, key)

    @property
    def status_tip(self) -> str:
        c = self.checkpoint
        key = "unsafe" if c.status == "ok" and unsafe(c) else c.status
        lines = [STATUS_TIPS.get(key, ""), *c.warnings]
        if c.link_to:
            lines.insert(0, f"A link to {c.link_to}")
        return "\n".join(line for line in lines if line)

    @property
    def badges(self) -> list[str]:
        return [word for word, on in (("best", self.best), ("latest", self.latest),
                                      ("resume", self.resume)) if on]

    def part(self, part: str) -> bool | None:
        return self.checkpoint.has.get(part)

    def part_tip(self, part: str) -> str:
        what = PART_NAMES[part][1]
        state = self.part(part)
        if part == "model" and state and self.checkpoint.weights == "adapter":
            return f"{what}: adapter only (the base model must match)"
        return f"{what}: " + {True: "present", False: "missing", None: "unknown"}[state]


def unsafe(c: Checkpoint) -> bool:
    """Inspection met a pickle it would have had to run to read: contents unknown."""
    return any(UNKNOWN in w or " would run " in w for w in c.warnings)


def rows(report: Report, resume: ResumeAdvice | None = None) -> list[CheckpointItem]:
    """The report's checkpoints, by step, with the best, latest and resume point flagged."""
    resume = resume or report.resume
    chosen = resume.checkpoint if resume else None
    return [CheckpointItem(c, c is report.best, c is report.latest, c is chosen)
            for c in report.checkpoints]


def metric_value(row: CheckpointItem, metric: str) -> str:
    value = row.checkpoint.metrics.get(metric)
    return fmt.number(value) if isinstance(value, int | float) else ""


def metric_tip(row: CheckpointItem, metric: str) -> str | None:
    """Where a value came from: training loss is smoothed, eval the last one at or before."""
    taken = row.checkpoint.metric_steps.get(metric)
    if metric not in row.checkpoint.metrics:
        return None
    if metric == "loss":
        return f"mean of the last logged training losses up to step {taken}" if taken else None
    return f"evaluated at step {taken:,}" if taken is not None else "as the checkpoint states it"


def written(row: CheckpointItem, now: datetime | None = None) -> str:
    """When the checkpoint was written, short: "02 Dec 17:09" (the year only when not this one)."""
    when = row.checkpoint.written_at
    if when is None:
        return ""
    local = when.astimezone() if when.tzinfo else when
    if local.year != (now or datetime.now()).year:
        return fmt.when(when)
    return local.strftime("%d %b %H:%M")


def size(row: CheckpointItem) -> str:
    n = row.checkpoint.size_bytes
    return "" if n is None or row.checkpoint.link_to else size_text(n)


def eval_column(metric: str | None) -> str:
    """The metric beside the training loss: the ranking metric, else the eval loss."""
    return metric if metric and metric != "loss" else "eval_loss"


def metric_choices(checkpoints: list[Checkpoint]) -> list[str]:
    """Metrics the checkpoints carry that can rank them: eval loss first, then the others."""
    names = {n for c in checkpoints for n in c.metrics if n == "loss" or is_eval_metric(n)}
    return sorted(names, key=lambda n: (n != "eval_loss", n == "loss", n))


def ranking_text(report: Report) -> str:
    """"Best by eval_loss (lower is better)", or why no checkpoint can be called best."""
    choice = report.choice
    if choice.metric is None:
        return _sentence(choice.note)
    text = f"Best by {choice.metric}"
    return text + f" ({MODES[choice.mode]})" if choice.mode else text


def ranking_note(report: Report) -> str:
    """Why the automatic choice ranks by what it does (empty when the user must answer)."""
    return "" if must_ask_mode(report) else _sentence(report.choice.note)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("." if text and not text.endswith(".") else "")


def must_ask_mode(report: Report) -> bool:
    """The metric's name does not say whether higher or lower is better: ask the user."""
    return report.choice.metric is not None and report.choice.mode is None


def guessed_mode(metric: str | None) -> str | None:
    return metric_mode(metric) if metric else None


def resumable(c: Checkpoint) -> bool:
    """Whether a checkpoint can be resumed from at all: its files are here, weights included."""
    return c.present and c.has.get("model") is not False


def not_resumable(row: CheckpointItem) -> str:
    """Why :func:`resumable` says no, in words."""
    if not row.checkpoint.present:
        return f"{row.status}: nothing to resume"
    return "no model weights: there is nothing to resume from"


def resume_title(resume: ResumeAdvice | None, checkpoints: list[Checkpoint] = ()) -> str:
    """The resume box's heading: where to resume, or why there is nowhere."""
    if resume is None:
        return why_none(checkpoints)
    c = resume.checkpoint
    where = f"step {c.step:,}" if c.step is not None else PurePath(c.path).name
    return f"Resume from {where} ({PurePath(c.path).name})"


def lineage_text(origin: Lineage | None, names: Mapping[int, str]) -> str:
    """Where this run came from and which runs continued from its checkpoints."""
    if origin is None:
        return ""
    lines = []
    if origin.resumed_from:
        source = PurePath(origin.resumed_from).name
        if origin.parent_run is not None and origin.parent_run != origin.run_id:
            run = names.get(origin.parent_run, f"run {origin.parent_run}")
            source += f" of {run}"
        lines.append(f"This run resumed from {source}.")
    if origin.children:
        runs = ", ".join(names.get(i, f"run {i}") for i in origin.children)
        lines.append(f"Resumed from this run's checkpoints: {runs} (those checkpoints are kept).")
    return " ".join(lines)

