"""The calibration view as data: each run predicted against its recorded peak, each group judged.

A point's prediction is the held-out one (the fit of every other run), so
the scatter shows how the wizard would have done on that run; the analytical
figure beside it shows what calibration changed. Whether a group is trusted
is core's rule (:func:`core.calibration.trust`), so the app and
``headroom fit`` say the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.calibration import HUBER, NOISE, PARAMS, Calibration, GroupFit, Sample, trust
from core.memory import GIB, estimate

# Beyond twice the Huber threshold a run's residual gets under half weight in the fit.
OUTLIER = 2 * HUBER * NOISE
COEFFICIENTS = {"activations": "activations ×", "logits": "logits ×", "offset_gib": "offset GiB",
                "reserved_factor": "reserved ×", "context_gib": "context GiB"}


@dataclass(frozen=True)
class Point:
    """One recorded reading (or OOM) of one run, and what the model says of it."""

    run_id: int
    name: str
    counter: str
    group: str  # the most specific group the run belongs to
    recorded_gib: float | None  # None for an OOM
    oom_gib: float | None  # the card the run died on, for an OOM
    analytical_gib: float
    fitted_gib: float
    held_out_gib: float | None

    @property
    def predicted_gib(self) -> float:
        return self.fitted_gib if self.held_out_gib is None else self.held_out_gib

    @property
    def error(self) -> float | None:
        """Relative error of the prediction shown (None for an OOM)."""
        return self.predicted_gib / self.recorded_gib - 1 if self.recorded_gib else None

    @property
    def outlier(self) -> bool:
        return bool(self.recorded_gib) and abs(self.fitted_gib / self.recorded_gib - 1) > OUTLIER

    @property
    def status(self) -> str:
        if self.oom_gib is not None:
            return f"died of OOM on {self.oom_gib:.1f} GiB: needed more"
        if self.outlier:
            return (f"outlier: {abs(self.fitted_gib / self.recorded_gib - 1):.0%} off even "
                    "when fitted, so it is down-weighted")
        return ""


@dataclass(frozen=True)
class GroupRow:
    key: tuple[str, ...]
    label: str
    runs: int
    coefficients: tuple[float, ...]
    held_out_error: float | None
    prior_error: float | None
    trusted: bool
    verdict: str

    @property
    def short(self) -> str:
        """The verdict in two or three words, for a table cell."""
        if self.trusted:
            return "trusted"
        if self.held_out_error is None or self.prior_error is None:
            return "too few runs"
        return "loose" if self.held_out_error < self.prior_error else "not better"


@dataclass(frozen=True)
class Skipped:
    run_id: int
    name: str
    reason: str

    @property
    def excluded(self) -> bool:
        from tracker.calibration import EXCLUDED  # the module loads the ORM: not at start

        return self.reason == EXCLUDED


@dataclass(frozen=True)
class Summary:
    calibration: Calibration
    points: list[Point]
    groups: list[GroupRow]
    skipped: list[Skipped]  # excluded runs and runs whose shape says too little
    no_peak: int  # runs that recorded no memory at all
    names: dict[int, str]

    @property
    def runs(self) -> int:
        return len({p.run_id for p in self.points})

    def group(self, label: str) -> GroupRow | None:
        return next((g for g in self.groups if g.label == label), None)

    @property
    def headline(self) -> str:
        if not self.points:
            return ("No stored run has both a shape and a memory peak yet, so the wizard's "
                    "figures are analytical. Ingest logs that record memory, and complete a "
                    "run's shape in Details when its log does not state it.")
        root = self.groups[0]
        verdict = ("the wizard trusts its calibrated figures" if root.trusted
                   else "the wizard shows its calibrated figures with a warning")
        return (f"{self.runs} runs calibrate the memory model in {len(self.groups)} groups. "
                f"{root.verdict[:1].upper()}{root.verdict[1:]}: {verdict}.")


def summarise(calibration: Calibration, skipped: dict[int, str],
              names: dict[int, str]) -> Summary:
    """Everything the view shows, from a leave-one-out fit and the runs it could not use."""
    from tracker.calibration import NO_PEAK

    points = [_point(calibration, s, names) for s in calibration.samples]
    groups = [_group_row(g) for g in calibration.ranked_groups()]
    listed = [Skipped(run_id, names.get(run_id, f"run {run_id}"), why)
              for run_id, why in sorted(skipped.items()) if why != NO_PEAK]
    return Summary(calibration, points, groups, listed,
                   sum(1 for why in skipped.values() if why == NO_PEAK), names)


def _point(calibration: Calibration, s: Sample, names: dict[int, str]) -> Point:
    counter = s.counter if s.peak_gib is not None else "device"
    group = calibration.group_for(s.context)
    fitted = calibration.predict(s.spec, s.setup, s.gpu, counter)
    analytical = estimate(s.spec, s.setup).reading(counter) / GIB
    return Point(s.run_id, s.name or names.get(s.run_id, f"run {s.run_id}"), counter,
                 group.label if group else "all runs", s.peak_gib, s.oom_capacity_gib,
                 analytical, fitted.gib if fitted else analytical,
                 calibration.held_out.get((s.run_id, counter)) if s.peak_gib else None)


def _group_row(group: GroupFit) -> GroupRow:
    trusted, text = trust(group)
    return GroupRow(group.key, group.label, len(set(group.run_ids)), group.theta,
                    group.held_out_error, group.prior_error, trusted, text)


def group_title(label: str) -> str:
    """A group as the view says it: framework × GPU × attention, with what a log left unsaid."""
    unsaid = ("framework not stated", "GPU not stated", "attention not stated")
    parts = label.split(" x ")
    if parts == ["all runs"]:
        return label
    return " × ".join(unsaid[i] if part == "?" else part for i, part in enumerate(parts))


def coefficient_labels() -> list[str]:
    return [COEFFICIENTS[p] for p in PARAMS]
