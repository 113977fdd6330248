"""Diagnostics: the seed article's troubleshooting table, applied to a run's series and events.

Each rule is a pure function ``RunData -> list[Finding]`` in the module of its
family, listed once in :data:`core.diagnostics.rules.RULES` with the finding
kinds it can raise and their titles. :func:`diagnose` runs them all; a rule that
fails on odd data is logged and skipped, so one bug never hides the other
findings (or an ingest). The rules load on first use: listing runs and their
stored findings needs only the plain data of :mod:`core.diagnostics.finding`.
"""

from __future__ import annotations

import logging

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

__all__ = ["CRITICAL", "INFO", "SEVERITIES", "WARNING", "Finding", "PeerRun", "RunData",
           "diagnose", "severity_rank", "title", "worst"]

log = logging.getLogger(__name__)


def title(kind: str) -> str:
    """A short title for a finding kind, for lists and plot labels."""
    from core.diagnostics.rules import RULES

    for rule in RULES:
        if kind in rule.kinds:
            return rule.kinds[kind]
    return kind.replace("_", " ").capitalize()


def diagnose(run: RunData, *, strict: bool = False) -> list[Finding]:
    """Every rule's findings on ``run``, most severe first, then by step.

    With ``strict`` a failing rule raises (for tests); otherwise it is logged
    and the other rules still report.
    """
    from core.diagnostics.rules import RULES

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
