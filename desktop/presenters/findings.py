"""What the findings list and its "why?" pane say about each diagnostic finding.

Rows and texts are plain strings built from :class:`core.diagnostics.Finding`
(severity, title, steps, message, cause, remedy, evidence), so the wording is
tested without Qt and the views only lay it out.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.diagnostics import Finding, severity_rank, title
from desktop.presenters import formatting as fmt

# Finding kinds that "Find the smallest fix" answers: the run ran out of GPU memory.
FIX_KINDS = frozenset({"oom_start", "oom_mid"})
MAX_LIST_ITEMS = 5
# Words in evidence keys that read better spelled their own way.
WORDS = {"lr": "LR", "gib": "GiB", "gpu": "GPU", "gpus": "GPUs", "fp16": "fp16", "oom": "OOM",
         "rng": "RNG", "tp": "TP", "pp": "PP", "dp": "DP", "mfu": "MFU"}


@dataclass(frozen=True)
class FindingItem:
    """One finding as the list shows it, with the run it belongs to."""

    run_id: int
    run_name: str
    index: int  # position in the run's findings: with run_id, the finding's identity
    finding: Finding

    @property
    def key(self) -> tuple[int, int]:
        return self.run_id, self.index

    @property
    def title(self) -> str:
        return title(self.finding.kind)

    @property
    def steps(self) -> str:
        return steps_text(self.finding)

    @property
    def fixable(self) -> bool:
        """Whether the smallest-fix search answers it (a GPU out-of-memory finding)."""
        return self.finding.kind in FIX_KINDS


def rows(findings: Mapping[int, list[Finding]], names: Mapping[int, str]) -> list[FindingItem]:
    """Every run's findings, runs in the given order, most severe first within each run."""
    out = []
    for run_id, found in findings.items():
        for index, finding in enumerate(found):
            out.append(FindingItem(run_id, names.get(run_id, f"run {run_id}"), index, finding))
    return out


def steps_text(finding: Finding) -> str:
    """"120", "3,710–3,730", or "" for a finding about the whole run."""
    start, end = finding.step_start, finding.step_end
    if start is None:
        return ""
    if end is None or end == start:
        return fmt.count(start)
    return f"{fmt.count(start)}–{fmt.count(end)}"


def summary(found: Iterable[Finding]) -> str:
    """Counts by severity, most severe first: "1 critical, 2 warnings"."""
    counts: dict[str, int] = {}
    for finding in found:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    if not counts:
        return "no findings"
    parts = sorted(counts.items(), key=lambda kv: -severity_rank(kv[0]))
    return ", ".join(f"{n} {_plural(severity, n)}" for severity, n in parts)


def _plural(severity: str, n: int) -> str:
    return severity if n == 1 or severity in ("info", "critical") else severity + "s"


def label(key: str) -> str:
    """An evidence key in words: ``lr_ratio_to_usual`` -> "LR ratio to usual"."""
    words = [WORDS.get(w, w) for w in key.replace("_per_s", "/s").split("_") if w]
    if len(words) > 1 and words[-1] == "s":
        words[-1] = "(s)"
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def value_text(value: Any) -> str:
    """An evidence value on one line: numbers compact, lists shortened, nested dicts inline."""
    if value is None:
        return fmt.MISSING
    if isinstance(value, bool | int | float):
        return fmt.number(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{label(k).lower()} {value_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        shown = "; ".join(value_text(v) for v in value[:MAX_LIST_ITEMS])
        more = len(value) - MAX_LIST_ITEMS
        return shown + (f"; … {more} more" if more > 0 else "")
    return str(value)


def evidence(finding: Finding) -> list[tuple[str, str]]:
    """The numbers behind a finding, as (label, value) pairs in the rule's order."""
    return [(label(k), value_text(v)) for k, v in finding.evidence.items()]


def why_html(row: FindingItem) -> str:
    """The "why?" pane: what happened, the likely cause, the remedy, the evidence numbers."""
    f = row.finding
    where = f"steps {row.steps}" if "–" in row.steps else (f"step {row.steps}" if row.steps
                                                          else "the whole run")
    parts = [
        f"<h3 style='margin:0'>{_e(row.title)}</h3>",
        f"<p style='color:#616e7c;margin-top:2px'>{_e(f.severity)} · {_e(where)} · "
        f"{_e(row.run_name)}</p>",
        f"<p>{_e(f.message)}</p>",
        f"<p><b>Likely cause.</b> {_e(f.cause)}</p>",
        f"<p><b>What to do.</b> {_e(f.remedy)}</p>",
    ]
    pairs = evidence(f)
    if pairs:
        cells = "".join(f"<tr><td style='color:#52606d;padding-right:10px'>{_e(k)}</td>"
                        f"<td>{_e(v)}</td></tr>" for k, v in pairs)
        parts.append(f"<p style='margin-bottom:2px'><b>Evidence</b></p><table>{cells}</table>")
    return "".join(parts)


def _e(text: str) -> str:
    return html.escape(str(text))
