"""What the selected runs could be grouped by: the fields and name patterns that would group them.

A field is worth offering when grouping by it makes at least one group of
two runs or more, and more than one group: the knob that varies between the
runs (learning rate, LoRA rank) while the seed varies within each group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from keyword import iskeyword
from typing import Any

from core.shape import RunShape
from tracker.groups import GroupBy, assign, group_by
from tracker.model import RunSummary
from tracker.readers._common import flatten

# Patterns that take a repeat's number out of a run's name.
NAME_PATTERNS = (r"[-_.]?seed[-_=]?\d+", r"[-_.]s\d+$", r"[-_.]run\d+$", r"[-_.]?\d+$")
# Config keys that name where or when a run wrote, not how it trained.
NOISE = ("output_dir", "logging_dir", "run_name", "hub_", "report_to", "versions.",
         "recorder.", "push_to_hub", "resume_from_checkpoint")
MAX_SUGGESTIONS = 24
NAME_PATTERNS_AS_TEXT = tuple(f"name~{p}" for p in NAME_PATTERNS)


def suggestions(runs: list[RunSummary], configs: Mapping[int, dict[str, Any]]) -> list[str]:
    """Group-by texts that split ``runs`` into groups of several, best first."""
    if len(runs) < 3:
        return []
    extras = {r.id: {"config": configs.get(r.id) or {}} for r in runs}
    texts = [*NAME_PATTERNS_AS_TEXT, "tags", "format", "method", *RunShape.field_names(),
             *(f"config.{key}" for key in _config_keys(configs.values()))]
    out = []
    for text in dict.fromkeys(texts):
        if _groups_well(runs, group_by(text), extras):
            out.append(text)
    return out[:MAX_SUGGESTIONS]


def _groups_well(runs: list[RunSummary], by: GroupBy, extras: dict) -> bool:
    sizes = [len(m) for m in assign(runs, by, extras).values()]
    return 1 < len(sizes) < len(runs) and max(sizes) > 1


def _config_keys(configs: Iterable[dict[str, Any]]) -> list[str]:
    keys: set[str] = set()
    for config in configs:
        for key, value in flatten(config).items():
            if (isinstance(value, (str, int, float, bool)) and not any(n in key for n in NOISE)
                    and all(p.isidentifier() and not iskeyword(p) for p in key.split("."))):
                keys.add(key)
    return sorted(keys)
