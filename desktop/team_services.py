"""The team tracker's door, beside :class:`AppServices`: connect, switch databases, copy runs.

The app opens on its local database (``home``). Connecting opens the team
database in the pool (creating or upgrading its tables, refusing a newer
schema) and, unless only a copy is wanted, switches the app to it. The
connection is remembered in the settings and the password in the system
keyring, never in the settings file. Publishing and taking runs offline run
:func:`tracker.team.copy_runs` (the command line's loop) in a worker: one run per
transaction, so a lost connection stops the copy between runs and the report
says what got across.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from desktop import passwords
from desktop.presenters.team_connection import Connection, copy_report, database_label
from desktop.settings import Settings
from desktop.workers import Worker

if TYPE_CHECKING:
    from desktop.services import AppServices
    from tracker.store import Store
    from tracker.team import CopyReport


class TeamServices(QObject):
    def __init__(self, services: AppServices, settings: Settings) -> None:
        super().__init__(services)
        self._services, self._settings = services, settings
        self.home = services.store  # the database the app opened with (once it has opened)
        services.sig_store_ready.connect(lambda: setattr(self, "home", services.store))
        self.team_store: Store | None = None
        self.connection = Connection.from_settings(settings.team_connection())
        self.copying = False

    # ---- Which database

    @property
    def on_team(self) -> bool:
        return self.team_store is not None and self._services.store is self.team_store

    def label(self, store: Store) -> str:
        return database_label(store.display_url)

    def use_team(self) -> bool:
        store = self.team_store
        if store is None or not self._services.switch_store(store, self.label(store)):
            return False
        self._settings.team_active = True
        self._services.sig_message.emit("Working on the team tracker")
        return True

    def use_local(self) -> bool:
        if not self._services.switch_store(self.home, self.label(self.home)):
            return False
        self._settings.team_active = False
        self._services.sig_message.emit("Working on the local database")
        return True

    # ---- Connecting

    def saved_password(self, connection: Connection) -> str | None:
        return passwords.load(connection.account)

    def probe(self, connection: Connection, password: str, on_done: Callable[[str], None],
              on_error: Callable[[str], None]) -> Worker:
        """Try the connection without changing anything (in the pool); words for the dialog."""
        from tracker.team import probe

        url = connection.url(password)
        return self._services.workers.start(lambda _w: probe(url), on_done, on_error)

    def connect(self, connection: Connection, password: str, remember: bool | None,
                on_done: Callable[[], None], on_error: Callable[[str], None],
                switch: bool = True) -> Worker:
        """Open the team database in the pool, remember it, and switch to it if ``switch``.

        ``remember``: keep the password in the keyring (True), drop a kept one
        (False), or leave the keyring alone (None). Cancelling the returned
        worker before it ends drops the connection it made.
        """
        from tracker.team import open_store

        url = connection.url(password)

        def opened(store: Store) -> None:
            if worker.cancelled():
                store.close()
                return
            self._adopt(store, connection, password, remember)
            if switch:
                self.use_team()
            on_done()

        worker = self._services.workers.start(lambda _w: open_store(url), opened, on_error)
        return worker

    def _adopt(self, store: Store, connection: Connection, password: str,
               remember: bool | None) -> None:
        if self.team_store is not None and not self.on_team:
            self.team_store.close()
        self.team_store, self.connection = store, connection
        self._settings.set_team_connection(connection.to_settings())
        if remember:
            passwords.save(connection.account, password)
        elif remember is False:
            passwords.forget(connection.account)

    # ---- Copying runs

    def publish(self, run_ids: list[int], on_done: Callable[[CopyReport, str], None]) -> Worker:
        """Copy local runs to the team database (runs it already has are skipped)."""
        return self._copy(self.home, self.team_store, run_ids, "Published",
                          f"to {self.team_store.display_url}", on_done)

    def take_offline(self, run_ids: list[int],
                     on_done: Callable[[CopyReport, str], None]) -> Worker:
        """Copy team runs into the local database, to work with them away from the server."""
        return self._copy(self.team_store, self.home, run_ids, "Copied",
                          "into the local database", on_done)

    def _copy(self, source: Store, target: Store, run_ids: list[int], verb: str, where: str,
              on_done: Callable[[CopyReport, str], None]) -> Worker:
        from tracker.team import copy_runs

        def done(report: CopyReport) -> None:
            self.copying = False
            text = copy_report(verb, report, where)
            self._services.sig_message.emit(text)
            if report.copied and target is self._services.store:
                self._services.sig_runs_changed.emit()
            on_done(report, text)

        def failed(message: str) -> None:
            self.copying = False
            self._services.sig_message.emit(message)

        def progress(done: int, total: int, _label: str) -> None:
            self._services.sig_message.emit(f"Copying: {done} of {total} runs {where}…")

        self.copying = True
        return self._services.workers.start(
            lambda w: copy_runs(source, target, run_ids, progress=w.report, cancel=w.cancelled),
            done, failed, progress)

    def close(self) -> None:
        """Close the databases the app is not on (the services close the one it is on)."""
        for store in (self.home, self.team_store):
            if store is not None and store is not self._services.store:
                store.close()

