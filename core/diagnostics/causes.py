"""A finding's likely cause, chosen from its own evidence.

A detector lists the causes it knows, each with what its numbers say about it:
supported, ruled out, or not known (the log does not record what would tell).
The finding names the supported causes; when none is, the causes its evidence
cannot rule out; and the list goes into the evidence, so the "why?" pane never
blames what its own numbers contradict (an LR at 0.81× its usual value is not
"too high"). The remedy follows the same causes: no "lower the LR" for a bad batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    """One possible cause of a finding and what the evidence says about it."""

    name: str  # a few words: "a learning rate too high"
    text: str  # the sentence the finding states when the evidence supports it
    verdict: bool | None  # True supported, False ruled out, None not known
    why: str = ""  # the numbers behind the verdict: "LR 0.81× its usual value"
    remedy: str = ""  # what to do when it is the cause


def choose(causes: Sequence[Cause]) -> str:
    """The supported causes' sentences; else the causes left open, named as such."""
    supported = [c.text for c in causes if c.verdict]
    if supported:
        return " ".join(supported)
    left = [c.name for c in causes if c.verdict is None]
    if not left:
        return "None of the usual causes fits the evidence."
    listed = left[0] if len(left) == 1 else f"{', '.join(left[:-1])} or {left[-1]}"
    return f"The log cannot tell which: {listed}."


def remedy(causes: Sequence[Cause], always: str = "") -> str:
    """What to do about the supported causes (else the ones left open), then ``always``."""
    chosen = [c for c in causes if c.verdict] or [c for c in causes if c.verdict is None]
    steps = list(dict.fromkeys(c.remedy for c in chosen if c.remedy))
    return " ".join(steps + ([always] if always else []))


def considered(causes: Sequence[Cause]) -> list[str]:
    """Each cause with its verdict and the numbers behind it, for the evidence table."""
    words = {True: "likely", False: "ruled out", None: "not known"}
    return [f"{c.name}: {words[c.verdict]}" + (f" ({c.why})" if c.why else "") for c in causes]
