"""Run names that tell the shown runs apart, as W&B and TensorBoard legends do.

Runs of one sweep share long prefixes and suffixes ("fyh2001__megatron-sft-
recipes__p0_baseline_ds_prod_full_epoch/logging" and ".../stdout"); cut in the
middle, they look alike. Shown together, each keeps only the words that differ
(an ellipsis marks what was dropped), and runs whose names are the same get the
folder that tells them apart. The full name and path go in a tooltip.
"""

from __future__ import annotations

import re
from pathlib import PurePath

ELLIPSIS = "…"
MIN_KEPT = 4  # characters a shortened name keeps at least
_SEPARATORS = re.compile(r"([/_\-. :]+)")


def display_names(names: list[str], paths: list[str]) -> list[str]:
    """One short name per run (``names[i]`` read from ``paths[i]``), unique where they can be."""
    shown = _differing(names) if len(set(names)) > 1 else list(names)
    counts: dict[str, int] = {}
    for name in shown:
        counts[name] = counts.get(name, 0) + 1
    out = list(shown)
    for name in (name for name, n in counts.items() if n > 1):
        same = [i for i, other in enumerate(shown) if other == name]
        for i, folder in zip(same, _distinct_folders([paths[i] for i in same]), strict=True):
            out[i] = f"{name} ({folder})" if folder else name
    return out


def _differing(names: list[str]) -> list[str]:
    """Each name without the words every name starts and ends with."""
    tokens = [_SEPARATORS.split(name) for name in names]
    shortest = min(len(t) for t in tokens)
    start = 0
    while start < shortest - 1 and len({t[start] for t in tokens}) == 1:
        start += 1
    end = 0
    while end < shortest - 1 - start and len({t[-1 - end] for t in tokens}) == 1:
        end += 1
    start -= start % 2  # cut before a word, never inside a separator run
    end -= end % 2
    if _shortest(tokens, start, 0) < MIN_KEPT:
        start = 0  # "version_0" stays whole rather than "…0"
    if _shortest(tokens, start, end) < MIN_KEPT:
        end = 0
    out = []
    for t in tokens:
        middle = "".join(t[start:len(t) - end]).strip("/_-. :")
        if not middle:
            return list(names)
        out.append((ELLIPSIS if start else "") + middle + (ELLIPSIS if end else ""))
    return out


def _shortest(tokens: list[list[str]], start: int, end: int) -> int:
    return min(len("".join(t[start:len(t) - end])) for t in tokens)


def _distinct_folders(paths: list[str]) -> list[str]:
    """For each path, the nearest folder name (from the log upwards) that no other path shares."""
    parents = [PurePath(p).parent.parts[::-1] for p in paths]
    out = []
    for i, mine in enumerate(parents):
        others = [p for j, p in enumerate(parents) if j != i]
        chosen = next((part for depth, part in enumerate(mine)
                       if all(len(o) <= depth or o[depth] != part for o in others)), "")
        out.append(chosen)
    return out
