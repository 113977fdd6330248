"""Fit the memory model's uncertain coefficients to the peaks past runs recorded.

Weights, gradients and optimizer state are bookkeeping; what varies between
frameworks, kernels and allocators is the rest. Each context group
(framework x GPU model x attention implementation, falling back to coarser
groups) gets five coefficients: multipliers on activations and logits, an
offset in GiB, the reserved/allocated factor and the CUDA context. They are
fitted by Gauss-Newton on relative errors with a Gaussian prior (the
analytical model, or the parent group's fit: shrinkage for small groups),
Huber weights (one odd run cannot drag a group), and runs that died of OOM
as one-sided constraints (the peak exceeded the card). The Laplace
approximation gives each group's parameter uncertainty; predictions widen
their interval with it, with the group's scatter, and with the distance from
the runs the group has seen.

A group's figures are only *trusted* when they were checked on runs the fit
never saw, held out a whole experiment at a time (a sweep of one model and
method teaches nothing about the next one): :func:`trust` says so, with the
reason, for the command line and the app alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from core.memory import GIB, ModelSpec, Setup, estimate
from core.memory.estimate import CUDA_CONTEXT_GIB, NCCL_GIB, RESERVED_FACTOR

PARAMS = ("activations", "logits", "offset_gib", "reserved_factor", "context_gib")
PRIOR_MEAN = np.array([1.0, 1.0, 0.0, RESERVED_FACTOR, CUDA_CONTEXT_GIB])
PRIOR_SD = np.array([0.35, 0.5, 1.0, 0.2, 0.75])
NOISE = 0.08  # relative scatter of a recorded peak around what its setup implies
HUBER = 1.5  # residuals beyond 1.5 noise units get down-weighted
Z90 = 1.645
COUNTERS = ("allocated", "reserved", "device")
TRUSTED_INTERVAL = 0.25  # a trusted 90 % interval stays within +-25 % of its figure
MIN_EXPERIMENTS = 2


@dataclass(frozen=True)
class Sample:
    """One recorded run: its shape, the peak it reached (or the OOM it hit) and context."""

    run_id: int
    spec: ModelSpec
    setup: Setup
    gpu: str = ""
    counter: str = "allocated"
    peak_gib: float | None = None
    oom_capacity_gib: float | None = None  # the run died needing more than this
    mfu: float | None = None
    name: str = ""
    experiment: str = ""  # runs of one model and method: held out together

    @property
    def held_out_key(self) -> str:
        return self.experiment or f"run {self.run_id}"

    @property
    def context(self) -> tuple[str, str, str]:
        return (self.setup.framework or "?", self.gpu or "?", self.setup.attention)


@dataclass(frozen=True)
class _Terms:
    """A sample's analytical pieces, in GiB, for the coefficient fit."""

    backward: float  # static bytes held at the start of backward
    step: float  # static bytes at the optimizer step
    activations: float
    logits: float
    nccl: float


def _terms(spec: ModelSpec, setup: Setup) -> _Terms:
    est = estimate(spec, setup)
    t = est.terms
    nccl = NCCL_GIB if setup.layout.n_gpus > 1 else 0.0
    return _Terms(t.backward / GIB, t.step / GIB, t.activations / GIB, t.logits / GIB, nccl)


def predict_gib(t: _Terms, theta: np.ndarray, counter: str) -> tuple[float, np.ndarray]:
    """A reading in GiB under coefficients ``theta``, and its gradient in ``theta``."""
    a, lg, off, r, ctx = theta
    backward = t.backward + a * t.activations + lg * t.logits
    in_backward = backward >= t.step
    alloc = (backward if in_backward else t.step) + off
    d_alloc = np.array([t.activations if in_backward else 0.0,
                        t.logits if in_backward else 0.0, 1.0, 0.0, 0.0])
    if counter == "allocated":
        return alloc, d_alloc
    grad = r * d_alloc
    grad[3] = alloc
    if counter == "reserved":
        return r * alloc, grad
    grad[4] = 1.0
    return r * alloc + ctx + t.nccl, grad


@dataclass(frozen=True)
class GroupFit:
    """Coefficients of one context group and how well they predict its own runs."""

    key: tuple[str, ...]
    theta: tuple[float, ...]
    cov: tuple[tuple[float, ...], ...]
    noise: float  # relative scatter of the group's runs around the fit
    run_ids: tuple[int, ...]
    held_out_error: float | None = None  # median |error| / peak, its experiment held out
    prior_error: float | None = None  # the same for the uncalibrated model
    experiments: int = 0

    @property
    def interval(self) -> float:
        """Half-width of the group's 90 % interval, relative to the figure."""
        return Z90 * self.noise

    @property
    def coefficients(self) -> dict[str, float]:
        return dict(zip(PARAMS, self.theta, strict=True))

    @property
    def label(self) -> str:
        return " x ".join(self.key) if self.key else "all runs"


@dataclass(frozen=True)
class Calibrated:
    """A calibrated prediction for a new run, with its interval and the runs behind it."""

    counter: str
    gib: float
    low_gib: float
    high_gib: float
    group: str
    run_ids: tuple[int, ...]
    readings: dict[str, float] = field(default_factory=dict)
    trusted: bool = False
    why: str = ""  # why the figure is (not) trusted, in a sentence


@dataclass
class Calibration:
    """Fitted groups, most specific first when looked up."""

    groups: dict[tuple[str, ...], GroupFit]
    samples: list[Sample]
    mfu_by_gpu: dict[str, float] = field(default_factory=dict)
    # (run id, counter) -> GiB predicted with its experiment held out (held_out_fit fills it)
    held_out: dict[tuple[int, str], float] = field(default_factory=dict)

    def group_for(self, sample_context: tuple[str, str, str]) -> GroupFit | None:
        for key in _keys(sample_context):
            if key in self.groups:
                return self.groups[key]
        return None

    def predict(self, spec: ModelSpec, setup: Setup, gpu: str = "",
                counter: str = "device") -> Calibrated | None:
        """The fitted prediction, or None when no recorded run is relevant."""
        if not any(s.setup.training == setup.training for s in self.samples):
            return None
        probe = Sample(-1, spec, setup, gpu, counter)
        group = self.group_for(probe.context)
        if group is None:
            return None
        terms = _terms(spec, setup)
        theta = np.array(group.theta)
        value, grad = predict_gib(terms, theta, counter)
        near, distance = self._nearest(probe, group)
        spread = math.sqrt(group.noise**2 + float(grad @ np.array(group.cov) @ grad)
                           / max(value, 1e-6) ** 2 + distance**2)
        readings = {c: float(predict_gib(terms, theta, c)[0]) for c in COUNTERS}
        trusted, why = trust(group)
        if trusted and Z90 * spread > TRUSTED_INTERVAL:
            trusted, why = False, (f"this setup is far from the group's runs: its 90 % interval "
                                   f"is ±{Z90 * spread:.0%}, wider than ±{TRUSTED_INTERVAL:.0%}")
        return Calibrated(counter, float(value), float(value * max(0.0, 1 - Z90 * spread)),
                          float(value * (1 + Z90 * spread)), group.label, near, readings,
                          trusted, why)

    def _nearest(self, probe: Sample, group: GroupFit) -> tuple[tuple[int, ...], float]:
        members = [s for s in self.samples if s.run_id in group.run_ids]
        scored = sorted((distance(probe, s), s.run_id) for s in members)
        runs = tuple(dict.fromkeys(run for _, run in scored))[:5]  # a run logs several counters
        return runs, scored[0][0] if scored else 0.5

    def ranked_groups(self) -> list[GroupFit]:
        """Groups from the coarsest (all runs) to the most specific."""
        return sorted(self.groups.values(), key=lambda g: (len(g.key), g.key))

    def mfu(self, gpu: str) -> float | None:
        return self.mfu_by_gpu.get(gpu)


def distance(a: Sample, b: Sample) -> float:
    """How far a new run is from a recorded one, as extra relative uncertainty.

    Extrapolating to a bigger model or more tokens per micro-batch, a new method
    or precision, or another GPU or framework each widens the interval.
    """
    tok = lambda s: s.setup.micro_batch * s.setup.seq_len  # noqa: E731
    d = 0.04 * abs(math.log2(a.spec.total_params / b.spec.total_params))
    d += 0.03 * abs(math.log2(tok(a) / tok(b)))
    d += 0.10 * (a.setup.method != b.setup.method) + 0.04 * (a.setup.precision != b.setup.precision)
    d += 0.05 * (a.gpu != b.gpu) + 0.05 * (a.setup.framework != b.setup.framework)
    d += 0.04 * (a.setup.recompute != b.setup.recompute)
    return d


def _keys(context: tuple[str, str, str]) -> list[tuple[str, ...]]:
    framework, gpu, attention = context
    return [(framework, gpu, attention), (framework, gpu), (framework,), ()]


def fit(samples: Iterable[Sample]) -> Calibration:
    """Fit every context group, each shrunk toward its parent (the root toward the prior)."""
    usable = [s for s in samples if _usable(s)]
    prepared = [(s, _terms(s.spec, s.setup)) for s in usable]
    groups: dict[tuple[str, ...], GroupFit] = {}
    for depth in range(4):  # root, framework, framework x GPU, full context
        members: dict[tuple[str, ...], list] = {}
        for s, t in prepared:
            key = _keys(s.context)[3 - depth]
            members.setdefault(key, []).append((s, t))
        for key, rows in members.items():
            parent = groups.get(key[:-1]) if key else None
            groups[key] = _fit_group(key, rows, parent)
    return Calibration(groups, usable, _mfu(usable))


def _usable(s: Sample) -> bool:
    measured = s.peak_gib is not None and s.peak_gib > 0 and s.counter in COUNTERS
    return measured or (s.oom_capacity_gib is not None and s.oom_capacity_gib > 0)


def _fit_group(key: tuple[str, ...], rows: list, parent: GroupFit | None) -> GroupFit:
    mean = np.array(parent.theta) if parent else PRIOR_MEAN
    sd = np.maximum(np.sqrt(np.diag(parent.cov)), PRIOR_SD * 0.35) if parent else PRIOR_SD
    theta, cov, noise = solve(rows, mean, sd)
    return GroupFit(key, tuple(theta), tuple(map(tuple, cov)), noise,
                    tuple(s.run_id for s, _ in rows))


def solve(rows: Sequence[tuple[Sample, _Terms]], mean: np.ndarray, sd: np.ndarray,
          iterations: int = 30) -> tuple[np.ndarray, np.ndarray, float]:
    """MAP coefficients with Huber weights and OOM inequalities; Laplace covariance."""
    theta = mean.copy()
    prior_precision = np.diag(1.0 / sd**2)
    hessian = prior_precision
    for _ in range(iterations):
        jac, res, oom = _linearise(rows, theta)
        # Huber weights for measured peaks; an OOM is hard evidence and keeps full weight.
        weights = np.where(oom, 1.0, np.minimum(1.0, HUBER / np.maximum(np.abs(res), 1e-12)))
        hessian = jac.T @ (weights[:, None] * jac) + prior_precision
        gradient = jac.T @ (weights * res) - prior_precision @ (theta - mean)
        step = np.linalg.solve(hessian, gradient)
        theta = _bounded(theta + step)
        if np.max(np.abs(step)) < 1e-6:
            break
    _, res, _ = _linearise(rows, theta, include_satisfied=True)
    measured = [r for (s, _), r in zip(rows, res, strict=True) if s.peak_gib is not None]
    scatter = float(np.sqrt(np.mean(np.square(measured)))) * NOISE if measured else NOISE
    n = len(measured)
    noise = math.sqrt((n * scatter**2 + 3 * NOISE**2) / (n + 3))
    return theta, np.linalg.inv(hessian), noise


def _linearise(rows, theta: np.ndarray, include_satisfied: bool = False):
    """Standardised residuals (target - prediction) / (target x noise), their Jacobian, and
    which rows are violated OOM bounds."""
    jac, res, oom = [], [], []
    for s, t in rows:
        if s.peak_gib is not None:
            value, grad = predict_gib(t, theta, s.counter)
            target = s.peak_gib
        else:  # OOM: the device reading must exceed what the card had
            value, grad = predict_gib(t, theta, "device")
            target = s.oom_capacity_gib
            if value >= target and not include_satisfied:
                continue
            if value >= target:
                value = target
        scale = target * NOISE
        jac.append(grad / scale)
        res.append((target - value) / scale)
        oom.append(s.peak_gib is None)
    if not jac:
        return np.zeros((0, len(PARAMS))), np.zeros(0), np.zeros(0, dtype=bool)
    return np.array(jac), np.array(res), np.array(oom)


def _bounded(theta: np.ndarray) -> np.ndarray:
    """Keep coefficients physical: multipliers and factors positive, context non-negative."""
    low = np.array([0.05, 0.0, -50.0, 1.0, 0.0])
    high = np.array([5.0, 5.0, 50.0, 3.0, 8.0])
    return np.clip(theta, low, high)


def _mfu(samples: list[Sample]) -> dict[str, float]:
    by_gpu: dict[str, list[float]] = {}
    for s in samples:
        if s.mfu and 0 < s.mfu < 1 and s.gpu:
            by_gpu.setdefault(s.gpu, []).append(s.mfu)
    return {gpu: float(np.median(v)) for gpu, v in by_gpu.items()}


def held_out_fit(samples: Sequence[Sample],
                 refit: Callable[[list[Sample]], Calibration] = fit) -> Calibration:
    """Fit all samples, then each group's errors with one experiment at a time held out.

    Every run of the held-out experiment (all its counters) leaves the fit
    together, so a sweep of one setup cannot vouch for itself.
    """
    full = refit(list(samples))
    errors: dict[tuple[str, ...], list[float]] = {}
    prior: dict[tuple[str, ...], list[float]] = {}
    for experiment in dict.fromkeys(s.held_out_key for s in full.samples):
        rest = refit([s for s in full.samples if s.held_out_key != experiment])
        for held in (s for s in full.samples
                     if s.held_out_key == experiment and s.peak_gib is not None):
            predicted = rest.predict(held.spec, held.setup, held.gpu, held.counter)
            if predicted is not None:
                full.held_out[(held.run_id, held.counter)] = predicted.gib
            analytical = predict_gib(_terms(held.spec, held.setup), PRIOR_MEAN, held.counter)[0]
            for key in _keys(held.context):
                if key not in full.groups:
                    continue
                if predicted is not None:
                    errors.setdefault(key, []).append(abs(predicted.gib / held.peak_gib - 1))
                prior.setdefault(key, []).append(abs(analytical / held.peak_gib - 1))
    for key, group in full.groups.items():
        members = {s.held_out_key for s in full.samples if s.run_id in set(group.run_ids)}
        full.groups[key] = replace(
            group,
            held_out_error=float(np.median(errors[key])) if errors.get(key) else None,
            prior_error=float(np.median(prior[key])) if prior.get(key) else None,
            experiments=len(members),
        )
    return full


def trust(group: GroupFit) -> tuple[bool, str]:
    """Whether a group's calibrated figures can lead, and why, in one sentence.

    Trusted: checked on at least two experiments held out one at a time,
    better there than the uncalibrated model, with a 90 % interval within
    ±25 % that the held-out error also stays within.
    """
    runs = len(set(group.run_ids))
    if group.experiments < MIN_EXPERIMENTS:
        return False, (f"{runs} run{'s' if runs != 1 else ''} of {_count(group.experiments)}: "
                       f"too few to check on an experiment the fit never saw")
    if group.held_out_error is None or group.prior_error is None:
        return False, "no held-out check could be made"
    held, prior = f"{group.held_out_error:.0%}", f"{group.prior_error:.0%}"
    if group.held_out_error >= group.prior_error:
        return False, f"held-out error {held}, no better than {prior} uncalibrated"
    if group.interval > TRUSTED_INTERVAL:
        return False, (f"held-out error {held} against {prior} uncalibrated, but its 90 % "
                       f"interval is ±{group.interval:.0%}, wider than ±{TRUSTED_INTERVAL:.0%}")
    if group.held_out_error > group.interval:
        return False, (f"held-out error {held} is outside its own ±{group.interval:.0%} "
                       "interval")
    return True, (f"held-out error {held} against {prior} uncalibrated, over "
                  f"{group.experiments} experiments")


def _count(experiments: int) -> str:
    return "one experiment" if experiments == 1 else f"{experiments} experiments"
