"""Aggregate rows of run groups: count and mean ± std of each summary figure, as the table shows them.

The figures are :func:`tracker.groups.groups`' (the same as ``headroom runs
--group-by``); here they become cell texts and tooltips. Columns that no
group has a value for are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop.presenters import formatting as fmt
from tracker.groups import SUMMARY_FIELDS, Group, Stat

TITLES = {"steps": "Steps", "final_loss": "Last loss", "min_loss": "Min loss",
          "best_eval": "Best eval", "peak_gib": "Peak GiB", "tokens_per_s": "Tokens/s",
          "mfu": "MFU", "gpu_hours": "GPU-hours"}


@dataclass(frozen=True)
class GroupRow:
    key: str
    run_ids: tuple[int, ...]
    texts: tuple[str, ...]  # group, runs, then one mean ± std per column
    tips: tuple[str, ...]


def columns(groups: list[Group]) -> list[str]:
    """The summary fields at least one group has."""
    return [name for name in SUMMARY_FIELDS if any(g.stats.get(name) for g in groups)]


def headers(groups: list[Group]) -> list[str]:
    return ["Group", "Runs", *(TITLES[c] for c in columns(groups))]


def rows(groups: list[Group]) -> list[GroupRow]:
    shown = columns(groups)
    return [GroupRow(g.key, g.run_ids,
                     (g.key, str(g.count), *(mean_std(g.stats[c], c) for c in shown)),
                     (", ".join(g.names), "", *(_tip(g.stats[c], c) for c in shown)))
            for g in groups]


def mean_std(stat: Stat | None, name: str) -> str:
    """``mean ± std`` in the column's own format (the mean alone over one run)."""
    if stat is None:
        return ""
    mean = _format(stat.mean, name)
    return mean if stat.std is None else f"{mean} ± {_format(stat.std, name)}"


def _tip(stat: Stat | None, name: str) -> str:
    if stat is None:
        return "no run of the group has it"
    return (f"{TITLES[name]} over {stat.n} run{'s' * (stat.n != 1)}: mean "
            f"{_format(stat.mean, name)}, min {_format(stat.min, name)}, "
            f"max {_format(stat.max, name)} (± is the sample standard deviation)")


def _format(value: float, name: str) -> str:
    if name == "peak_gib":
        return fmt.gib(value)
    if name in ("steps", "tokens_per_s"):
        return fmt.count(value)
    return fmt.number(value, digits=3)
