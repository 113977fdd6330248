"""Alerts in the app: runs in watched folders that finish, crash, go wrong or go quiet.

Beside :class:`AppServices`, one per app (built by the composition root). After runs
change (a live ingest brought points, a run went quiet), the runs under the
watched folders are read in the pool and shown to a
:class:`tracker.alerts.Watcher`, the rules ``headroom watch`` uses; each
alert the folder wants (the alerts file, :mod:`tracker.alerts`) is announced:
a system-tray message where the desktop has a tray, always an entry in the
status bar's alert list, and the command hook and webhook, in the pool.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from desktop.services import AppServices
from desktop.settings import Settings
from tracker import alerts
from tracker.alerts import KINDS, AlertConfig  # the alerts dialog takes them from here

__all__ = ["KINDS", "AlertConfig", "AlertServices"]

# Runs change many times a second while an ingest runs: look once they settle.
SETTLE_MS = 700
KEEP = 50  # alerts the status bar's list remembers
TICK_MS = 60_000


class AlertServices(QObject):
    sig_alert = Signal(object)
    """An :class:`tracker.alerts.Alert` the user should see."""

    def __init__(self, services: AppServices, settings: Settings) -> None:
        super().__init__(services)
        self._services, self._settings = services, settings
        self.config = self._load_config()
        self.watcher = alerts.Watcher(self.config.quiet_minutes * 60)
        self.recent: list[alerts.Alert] = []
        self.tray: QSystemTrayIcon | None = None
        self._looking = self._again = False
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle.timeout.connect(self.look)
        services.sig_runs_changed.connect(self._settle.start)
        self._tick = QTimer(self, interval=TICK_MS)  # runs go quiet while nothing changes
        self._tick.timeout.connect(self._look_if_watching)
        self._tick.start()
        services.sig_database_changed.connect(lambda _label: self._restart())
        services.sig_store_ready.connect(self.look)
        if services.ready:
            self.look()

    # ---- Configuration (the file ``headroom watch`` reads too)

    def set_config(self, config: alerts.AlertConfig) -> None:
        alerts.save(config)
        self.config = config
        self.watcher.quiet_after_s = config.quiet_minutes * 60

    def _load_config(self) -> alerts.AlertConfig:
        try:
            return alerts.load()
        except alerts.AlertConfigError as err:
            self._services.sig_message.emit(f"Alerts file ignored: {err}")
            return alerts.AlertConfig()

    # ---- Looking

    def look(self) -> None:
        """Read the watched runs in the pool and announce what changed (one look at a time)."""
        if self._looking:
            self._again = True
            return
        if not self._services.ready:
            return
        folders = [str(f) for f in self._settings.watched_folders]
        store, watcher, now = self._services.store, self.watcher, self._services.now()
        self._looking = True

        def read(_worker) -> list[alerts.Alert]:
            runs = [r for r in store.runs()
                    if any(alerts.within(r.source_path, f) for f in folders)]
            news = watcher.update(runs, store.findings, now)
            sources = {r.id: r.source_path for r in runs}
            return [self._placed(a, sources[a.run_id], folders) for a in news]

        self._services.workers.start(read, self._on_news, self._on_failed)

    def _look_if_watching(self) -> None:
        if self._settings.watched_folders:
            self.look()

    def _placed(self, alert: alerts.Alert, source: str, folders: list[str]) -> alerts.Alert:
        folder = self.config.folder_of(source, folders)
        return alerts.Alert(alert.kind, alert.run_id, alert.run, alert.message, folder)

    def _on_news(self, news: list[alerts.Alert]) -> None:
        self._looking = False
        for alert in news:
            if alert.kind in self.config.kinds_for(alert.folder):
                self.announce(alert)
        if self._again:
            self._again = False
            self.look()

    def _on_failed(self, message: str) -> None:
        self._looking = False
        self._services.sig_message.emit(f"Could not check the watched runs: {message}")

    def _restart(self) -> None:
        """Another database: its runs are new to the rules, not news."""
        self.watcher = alerts.Watcher(self.config.quiet_minutes * 60)
        self.look()

    def clear_recent(self) -> None:
        """Forget the alerts the status bar lists."""
        self.recent = []

    # ---- Announcing

    def announce(self, alert: alerts.Alert) -> None:
        self.recent = [alert, *self.recent][:KEEP]
        self.sig_alert.emit(alert)
        self._services.sig_message.emit(f"Alert — {alert.line()}")
        if QSystemTrayIcon.isSystemTrayAvailable():
            self._tray().showMessage(f"Headroom: run {alert.kind}", alert.message,
                                     QSystemTrayIcon.MessageIcon.Information, 10_000)
        config = self.config
        if config.on_alert.strip() or config.webhook.strip():
            self._services.workers.start(lambda _w: alerts.forward(alert, config),
                                         self._on_forwarded, self._services.sig_message.emit)

    def _on_forwarded(self, errors: list[str]) -> None:
        for error in errors:
            self._services.sig_message.emit(f"Alert not forwarded: {error}")

    def _tray(self) -> QSystemTrayIcon:
        if self.tray is None:
            from desktop.widgets.icons import app_icon

            self.tray = QSystemTrayIcon(app_icon(), self)
            self.tray.setToolTip("Headroom")
            self.tray.show()
        return self.tray
