"""The watched-folders list as the live panel shows it: each place, its state, its last news."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from desktop.presenters.live_status import ago

STATE_COLOURS = {"missing": "#c62828", "watching": "#2e7d32", "run log": "#616e7c"}


@dataclass(frozen=True)
class PlaceRow:
    place: str
    shown: str  # the path, with the home folder as ~
    state: str  # watching, run log, missing
    news: str  # what its last change brought, and when
    removable: bool  # a folder the user chose (run logs follow the runs table)


def rows(folders: list[str], run_logs: list[str], gone: set[str],
         news: dict[str, tuple[float, str]], now: float) -> list[PlaceRow]:
    out = []
    for place in [*folders, *run_logs]:
        folder = place in folders
        state = "missing" if place in gone else ("watching" if folder else "run log")
        when, text = news.get(place, (None, ""))
        said = f"{ago(now - when)}: {text}" if when is not None else ""
        out.append(PlaceRow(place, home_short(place), state, said, folder))
    return out


def summary(folders: int, run_logs: int, missing: int, last_look: float | None,
            now: float) -> str:
    """One line over the list: what is followed, what is gone, when it was last looked at."""
    if not folders and not run_logs:
        return "Not watching anything. Add a folder to follow the runs training there."
    parts = [f"{folders} folder{'s' * (folders != 1)}"]
    if run_logs:
        parts.append(f"{run_logs} log{'s' * (run_logs != 1)} of recent runs")
    text = "Watching " + " and ".join(parts)
    if missing:
        text += f" · {missing} missing"
    if last_look is not None:
        text += f" · looked {ago(now - last_look)}"
    return text


def home_short(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path == home or path.startswith(home + "/") else path
