"""What the detectors read (a run's series, events, shape, checkpoints, peers) and write (findings).

Both sides are plain data, so the rules stay pure: the tracker fills a
:class:`RunData` from the database, a test fills one from a reader's RunLog
or from arrays it built, and the desktop shows the :class:`Finding` list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from core.shape import RunShape

if TYPE_CHECKING:  # annotations only: severities and findings are read without numpy
    from core.checkpoints import Checkpoint
    from core.runlog import RunEvent, RunLog, Series

CRITICAL, WARNING, INFO = "critical", "warning", "info"
# Least to most severe; the runs table shows the worst of a run's findings.
SEVERITIES = (INFO, WARNING, CRITICAL)


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


def worst(severities) -> str | None:
    """The most severe of ``severities`` (None when there are none)."""
    ranked = sorted(severities, key=severity_rank)
    return ranked[-1] if ranked else None


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what happened where, why it likely happened, what to do.

    ``metric`` names the series the finding is about (the plot to mark),
    ``step_start``/``step_end`` the range to shade, ``marks`` single steps to
    mark, and ``evidence`` the numbers behind the message, for "why?".
    """

    kind: str
    severity: str
    message: str
    cause: str
    remedy: str
    step_start: int | None = None
    step_end: int | None = None
    metric: str | None = None
    marks: tuple[int, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["marks"] = list(self.marks)
        return out


@dataclass(frozen=True)
class PeerRun:
    """Another stored run, for rules that compare runs (throughput as GPUs are added)."""

    ref: str  # how to name it to a person, e.g. "run 12 (llama-8gpu)"
    shape: RunShape
    series: dict[str, Series] = field(default_factory=dict)


@dataclass
class RunData:
    """Everything a rule may look at for one run; only ``series`` is required."""

    series: dict[str, Series] = field(default_factory=dict)
    events: list[RunEvent] = field(default_factory=list)
    shape: RunShape = field(default_factory=RunShape)
    config: dict[str, Any] = field(default_factory=dict)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    peers: list[PeerRun] = field(default_factory=list)
    # The run this one continues (it starts where that one stopped), when known.
    previous: RunData | None = None
    name: str = ""

    @classmethod
    def from_log(cls, log: RunLog, **extra: Any) -> RunData:
        """A reader's run; ``extra`` sets other fields (checkpoints an inspection found, peers)."""
        from core.checkpoints import Checkpoint

        fields: dict[str, Any] = dict(
            series=dict(log.series), events=list(log.events), shape=log.shape,
            config=dict(log.config), name=log.name,
            checkpoints=[Checkpoint(c.path, c.step, metrics=dict(c.metrics), logged=True)
                         for c in log.checkpoints],
        )
        return cls(**{**fields, **extra})

    def get(self, name: str) -> Series | None:
        """The series called ``name``, or None when the run has no point of it."""
        series = self.series.get(name)
        return series if series is not None and len(series) else None

    def events_of(self, *kinds: str) -> list[RunEvent]:
        return [e for e in self.events if e.kind in kinds]
