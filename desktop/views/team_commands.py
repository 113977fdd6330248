"""The team-tracker commands of the main window, and what the app says when a server goes away.

Connect, go back to the local database, publish selected local runs, take
selected team runs offline. Each command is enabled only where it applies. A
lost connection is offered a way back to the local database, which always
works. At start the app reconnects to the team tracker it was on when it
closed, after the window shows, asking for the password where no keyring keeps it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QLineEdit, QMainWindow, QMessageBox, QWidget

from desktop.presenters.team_connection import Connection
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.team_services import TeamServices
from desktop.views.connect_dialog import ConnectDialog


def ask_password(parent: QWidget, connection: Connection) -> str | None:
    """The password for ``connection`` (None when cancelled); tests replace this function."""
    text, ok = QInputDialog.getText(
        parent, "Team tracker password", f"Password for {connection.account}:",
        QLineEdit.EchoMode.Password)
    return text if ok else None


def ask_switch_back(parent: QWidget, reason: str) -> bool:
    """Whether to go back to the local database after the server went away."""
    answer = QMessageBox.warning(
        parent, "Team tracker unreachable",
        f"The team tracker stopped answering:\n\n{reason}\n\n"
        "Nothing was half-stored: a run being written when the connection dropped is absent "
        "and can be ingested again. Switch to the local database?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.Yes)
    return answer == QMessageBox.StandardButton.Yes


class TeamCommands(QObject):
    def __init__(self, window: QMainWindow, services: AppServices, team: TeamServices,
                 settings: Settings, actions: dict[str, QAction]) -> None:
        super().__init__(window)
        self._window, self._services, self._settings = window, services, settings
        self._actions = actions
        self.team = team
        self._asking = False
        services.sig_connection_lost.connect(self._on_lost)
        services.sig_selection_changed.connect(self._enable)
        services.sig_database_changed.connect(self._enable)
        self._enable()
        if services.ready:
            QTimer.singleShot(0, self._reconnect)
        else:
            services.sig_store_ready.connect(self._reconnect)

    # ---- Commands

    def connect(self) -> None:
        """Ask where the team tracker is, try it, and switch the app to it."""
        self._dialog(switch=True)

    def use_local(self) -> None:
        self.team.use_local()

    def publish(self) -> None:
        """Copy the selected local runs to the team tracker (connecting first if needed)."""
        ids = list(self._services.selected)
        if ids and not self.team.on_team:
            self._with_team(lambda: self.team.publish(ids, self._copied))

    def take_offline(self) -> None:
        """Copy the selected team runs into the local database."""
        ids = list(self._services.selected)
        if ids and self.team.on_team:
            self.team.take_offline(ids, self._copied)

    def close(self) -> None:
        self.team.close()

    # ---- Steps

    def _dialog(self, switch: bool) -> bool:
        dialog = ConnectDialog(self.team, self._window, switch=switch)
        accepted = dialog.exec() == ConnectDialog.DialogCode.Accepted
        if dialog._worker is None:
            dialog.deleteLater()
        return accepted

    def _with_team(self, then) -> None:
        """Run ``then`` once the team database is open: at once, after a password, or a dialog."""
        if self.team.team_store is not None:
            then()
            return
        connection = self.team.connection
        password = self._password(connection) if connection else None
        if password is None:
            if self._dialog(switch=False):
                then()
            return
        self._services.sig_message.emit(f"Connecting to {connection.account}…")
        self.team.connect(connection, password, None, then, self._could_not, switch=False)

    def _password(self, connection: Connection) -> str | None:
        saved = self.team.saved_password(connection)
        return saved if saved is not None else ask_password(self._window, connection)

    def _copied(self, _report, _text: str) -> None:
        self._enable()

    def _could_not(self, message: str) -> None:
        self._services.sig_message.emit(f"Could not connect to the team tracker: {message}")

    def _reconnect(self) -> None:
        """Back on the team tracker the app was on when it closed (never over an explicit --db)."""
        connection = self.team.connection
        if not (self._settings.team_active and connection and self._services.on_default_database):
            return
        password = self._password(connection)
        if password is None:
            self._services.sig_message.emit("Working on the local database")
            return
        self._services.sig_message.emit(f"Reconnecting to {connection.account}…")
        self.team.connect(connection, password, None, lambda: None, self._could_not)

    def _on_lost(self, reason: str) -> None:
        if self._asking or not self.team.on_team:
            return  # one question at a time, however many loads failed
        self._asking = True
        try:
            if ask_switch_back(self._window, reason):
                self.team.use_local()
        finally:
            self._asking = False

    def _enable(self, *_args) -> None:
        on_team, selected = self.team.on_team, bool(self._services.selected)
        self._actions["use_local"].setEnabled(on_team)
        self._actions["publish"].setEnabled(selected and not on_team)
        self._actions["take_offline"].setEnabled(selected and on_team)
