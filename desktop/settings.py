"""What the app remembers between launches: window layout, plot choices, the last folder.

One typed wrapper over an INI-format ``QSettings`` file in Headroom's data
folder (``HEADROOM_HOME`` in tests), so no test can touch a user's settings and
a user can read or delete the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from tracker.db.engine import data_dir

# Bump when a key changes meaning; older files are then ignored rather than misread.
SCHEMA_VERSION = 1
TEAM_KEYS = ("host", "port", "database", "user")


class Settings:
    """Typed access to the remembered values; every getter has a default."""

    def __init__(self, path: Path | None = None) -> None:
        path = path or data_dir() / "settings.ini"
        self._q = QSettings(str(path), QSettings.Format.IniFormat)
        if self._q.value("schema_version", SCHEMA_VERSION, int) != SCHEMA_VERSION:
            self._q.clear()
        self._q.setValue("schema_version", SCHEMA_VERSION)

    def sync(self) -> None:
        self._q.sync()

    # ---- Window layout (opaque Qt blobs)

    def layout(self, key: str) -> QByteArray | None:
        value = self._q.value(f"layout/{key}")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_layout(self, key: str, state: QByteArray) -> None:
        self._q.setValue(f"layout/{key}", state)

    # ---- Plots

    @property
    def metrics(self) -> list[str]:
        """The metric panels the user chose; empty means the defaults."""
        return _strings(self._q.value("plots/metrics", []))

    @metrics.setter
    def metrics(self, names: list[str]) -> None:
        self._q.setValue("plots/metrics", list(names))

    @property
    def x_axis(self) -> str:
        return str(self._q.value("plots/x_axis", "step"))

    @x_axis.setter
    def x_axis(self, axis: str) -> None:
        self._q.setValue("plots/x_axis", axis)

    @property
    def smoothing(self) -> float:
        return float(self._q.value("plots/smoothing", 0.6))

    @smoothing.setter
    def smoothing(self, weight: float) -> None:
        self._q.setValue("plots/smoothing", float(weight))

    @property
    def log_y(self) -> bool:
        return self._q.value("plots/log_y", False, bool)

    @log_y.setter
    def log_y(self, on: bool) -> None:
        self._q.setValue("plots/log_y", bool(on))

    # ---- Comparing runs

    @property
    def grouping(self) -> dict[str, object]:
        """How the plots group runs: ``by`` (a field or ``name~pattern``), stat, band, members."""
        return {"by": str(self._q.value("groups/by", "")),
                "stat": str(self._q.value("groups/stat", "mean")),
                "band": str(self._q.value("groups/band", "std")),
                "members": self._q.value("groups/members", False, bool)}

    @grouping.setter
    def grouping(self, values: dict[str, object]) -> None:
        for key, value in values.items():
            self._q.setValue(f"groups/{key}", value)

    @property
    def saved_filters(self) -> dict[str, str]:
        """Queries the user saved in the runs panel, by the name they gave them."""
        try:
            saved = json.loads(str(self._q.value("filters/saved", "{}")))
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in saved.items()} if isinstance(saved, dict) else {}

    def save_filter(self, name: str, query: str | None) -> None:
        """Remember ``query`` as ``name`` (None forgets it); names may hold any character."""
        saved = self.saved_filters
        if query is None:
            saved.pop(name, None)
        else:
            saved[name] = query
        self._q.setValue("filters/saved", json.dumps(saved))

    # ---- Files

    @property
    def last_folder(self) -> str:
        return str(self._q.value("files/last_folder", str(Path.home())))

    @last_folder.setter
    def last_folder(self, folder: str) -> None:
        self._q.setValue("files/last_folder", folder)

    # ---- Live runs

    @property
    def watched_folders(self) -> list[str]:
        """Folders the app follows: new and growing logs there are ingested as they are written."""
        return _strings(self._q.value("live/folders", []))

    @watched_folders.setter
    def watched_folders(self, folders: list[str]) -> None:
        self._q.setValue("live/folders", list(folders))

    @property
    def watch_run_logs(self) -> bool:
        """Also follow the logs of ingested runs that may still be running."""
        return self._q.value("live/run_logs", True, bool)

    @watch_run_logs.setter
    def watch_run_logs(self, on: bool) -> None:
        self._q.setValue("live/run_logs", bool(on))

    @property
    def stale_minutes(self) -> float:
        """A running run whose logs stay silent this long is shown as "crashed?"."""
        return float(self._q.value("live/stale_minutes", 10.0))

    @stale_minutes.setter
    def stale_minutes(self, minutes: float) -> None:
        self._q.setValue("live/stale_minutes", float(minutes))

    @property
    def poll_seconds(self) -> float:
        """How often watched places are looked at (network filesystems send no notifications)."""
        return float(self._q.value("live/poll_seconds", 5.0))

    # ---- Team tracker (the password is never here: it lives in the system keyring)

    def team_connection(self) -> dict[str, str]:
        """host, port, database and user of the remembered team tracker ({} when none)."""
        return {key: str(self._q.value(f"team/{key}")) for key in TEAM_KEYS
                if self._q.value(f"team/{key}") not in (None, "")}

    def set_team_connection(self, fields: dict[str, str]) -> None:
        for key in TEAM_KEYS:
            self._q.setValue(f"team/{key}", str(fields.get(key, "")))

    @property
    def team_active(self) -> bool:
        """The app was on the team database when it closed: it reconnects at the next start."""
        return self._q.value("team/active", False, bool)

    @team_active.setter
    def team_active(self, on: bool) -> None:
        self._q.setValue("team/active", bool(on))

    # ---- Sizing wizard

    @property
    def sizing_gpus(self) -> list[str]:
        """The GPUs last compared in the sizing wizard (catalog names; empty: the defaults)."""
        return _strings(self._q.value("sizing/gpus", []))

    @sizing_gpus.setter
    def sizing_gpus(self, names: list[str]) -> None:
        self._q.setValue("sizing/gpus", list(names))

    @property
    def sizing_choices(self) -> dict[str, Any]:
        """The wizard's last model and training choices (names of ``Draft`` fields; {}: none)."""
        try:
            value = json.loads(str(self._q.value("sizing/choices", "{}")))
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @sizing_choices.setter
    def sizing_choices(self, values: dict[str, Any]) -> None:
        self._q.setValue("sizing/choices", json.dumps(values))


def _strings(value: object) -> list[str]:
    """QSettings returns a one-item list as a plain string and an empty one as None."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]
