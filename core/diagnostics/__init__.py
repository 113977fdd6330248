"""Diagnostics: the seed article's troubleshooting table, applied to a run's series and events.

Each rule is a pure function ``RunData -> list[Finding]`` in the module of its
family, listed once in :data:`RULES` with the finding kinds it can raise and
their titles. :func:`diagnose` runs them all; a rule that fails on odd data is
logged and skipped, so one bug never hides the other findings (or an ingest).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from core.diagnostics import (
    memory_use,
    nan,
    oom,
    overfit,
    resume,
    schedule,
    spikes,
    throughput,
    trend,
)
from core.diagnostics.finding import (
    CRITICAL,
    INFO,
    SEVERITIES,
    WARNING,
    Finding,
    PeerRun,
    RunData,
    severity_rank,
    worst,
)

__all__ = ["CRITICAL", "INFO", "RULES", "SEVERITIES", "WARNING", "Finding", "PeerRun", "Rule",
           "RunData", "diagnose", "severity_rank", "title", "worst"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rule:
    """A detector: its name, its function, and the kinds of finding it raises, with titles."""

    name: str
    check: Callable[[RunData], list[Finding]]
    kinds: dict[str, str]


RULES: tuple[Rule, ...] = (
    Rule("oom", oom.out_of_memory, {"oom_start": "Out of memory at start",
                                    "oom_mid": "Out of memory mid-run",
                                    "oom_host": "Host out of memory"}),
    Rule("nan", nan.nan_loss, {"loss_nan": "Loss NaN/Inf",
                               "overflow_skips": "fp16 overflow steps skipped"}),
    Rule("loss_scale", nan.loss_scale_collapse, {"loss_scale_collapse": "Loss scale collapsed"}),
    Rule("spikes", spikes.loss_spikes, {"loss_spike": "Loss spike"}),
    Rule("grad_norm", spikes.grad_norm_explosion, {"grad_explosion": "Gradient norm explosion"}),
    Rule("trend", trend.loss_trend, {"loss_plateau": "Loss flat from the start",
                                     "loss_plateau_late": "Loss plateau",
                                     "loss_rising": "Loss rising"}),
    Rule("overfitting", overfit.overfitting, {"overfitting": "Eval diverging from train"}),
    Rule("resume", resume.resume_rebound, {"resume_rebound": "Rebound after resume"}),
    Rule("lr_schedule", schedule.lr_schedule, {"lr_jump": "LR jump",
                                               "lr_restart": "LR warm-up restarted"}),
    Rule("throughput", throughput.throughput_drop, {"throughput_drop": "Throughput drop"}),
    Rule("scaling", throughput.scaling, {"scaling": "More GPUs, less per GPU"}),
    Rule("memory", memory_use.memory_headroom, {"memory_tight": "Memory nearly full",
                                                "memory_spare": "Memory to spare"}),
)


def title(kind: str) -> str:
    """A short title for a finding kind, for lists and plot labels."""
    for rule in RULES:
        if kind in rule.kinds:
            return rule.kinds[kind]
    return kind.replace("_", " ").capitalize()


def diagnose(run: RunData, *, strict: bool = False) -> list[Finding]:
    """Every rule's findings on ``run``, most severe first, then by step.

    With ``strict`` a failing rule raises (for tests); otherwise it is logged
    and the other rules still report.
    """
    found: list[Finding] = []
    for rule in RULES:
        try:
            found.extend(rule.check(run))
        except Exception:
            if strict:
                raise
            log.exception("diagnostic rule %r failed on run %r", rule.name, run.name)
    return sorted(found, key=lambda f: (-severity_rank(f.severity), f.step_start is None,
                                        f.step_start or 0))
