"""What the app remembers between launches: window layout, plot choices, the last folder.

One typed wrapper over an INI-format ``QSettings`` file in Headroom's data
folder (``HEADROOM_HOME`` in tests), so no test can touch a user's settings and
a user can read or delete the file.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from tracker.db.engine import data_dir

# Bump when a key changes meaning; older files are then ignored rather than misread.
SCHEMA_VERSION = 1


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

    # ---- Files

    @property
    def last_folder(self) -> str:
        return str(self._q.value("files/last_folder", str(Path.home())))

    @last_folder.setter
    def last_folder(self, folder: str) -> None:
        self._q.setValue("files/last_folder", folder)


def _strings(value: object) -> list[str]:
    """QSettings returns a one-item list as a plain string and an empty one as None."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]
