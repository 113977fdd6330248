"""The diagnostic rules, in one table: each detector with the finding kinds it raises.

Importing this loads every rule module (and numpy); :mod:`core.diagnostics` does
it only when a run is diagnosed or a finding's title is asked for, so reading
stored findings and severities stays light.
"""

from __future__ import annotations

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
from core.diagnostics.finding import Finding, RunData


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
