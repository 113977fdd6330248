"""Application start-up: QApplication, services, the main window, one window per database.

``--smoke`` opens the window on a temporary settings file and database (or the
one ``--db`` names), waits for its first paint, prints how long that took and
exits: CI's proof that the app starts where Qt is installed, and bench/gui.py's
launch timing. A launch that finds the app already open on
its database hands its paths to that window and exits (desktop/single_instance.py).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

from desktop.single_instance import InstanceServer, hand_over, server_name

SMOKE_TIMEOUT_MS = 20_000


def make_app():
    """The QApplication (created once), named so settings, dialogs and the taskbar say Headroom."""
    from PySide6.QtWidgets import QApplication

    from desktop.desktop_entry import APP_ID
    from desktop.widgets.icons import app_icon

    # argv[0] names the X11 window class's instance; the entry's StartupWMClass is the class.
    app = QApplication.instance() or QApplication([APP_ID])
    app.setApplicationName("Headroom")
    app.setOrganizationName("Headroom")
    app.setDesktopFileName(APP_ID)  # Wayland and X11 docks match the window to headroom.desktop
    app.setWindowIcon(app_icon())
    return app


def run_app(db: str | None = None, paths: list[str] | None = None, smoke: bool = False) -> int:
    """Open the main window (ingesting ``paths``) and run until it is closed."""
    started = time.perf_counter()
    app = make_app()
    instance = None if smoke else _instance_name(db)
    if instance is not None and hand_over(instance, paths or []):
        print("headroom: handed over to the open Headroom window", file=sys.stderr)
        return 0
    from desktop.main_window import MainWindow
    from desktop.services import AppServices
    from desktop.settings import Settings
    from tracker.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        try:
            store = Store(str(Path(tmp) / "smoke.db") if smoke and not db else db)
        except Exception as err:  # a newer schema, a bad URL, an unreachable server
            return _cannot_open(db, err)
        settings = Settings(Path(tmp) / "settings.ini" if smoke else None)
        window = MainWindow(AppServices(store), settings)
        window.show()
        if paths:
            window.services.ingest(paths)
        if smoke:
            return _smoke(app, window, started)
        server = InstanceServer(instance, window)
        server.sig_paths.connect(window.open_paths)
        # Smoothing uses pandas: importing it now, off the GUI thread, spares the first plot.
        window.services.workers.start(lambda _worker: importlib.import_module("pandas"))
        return app.exec()


def _instance_name(db: str | None) -> str:
    from tracker.db.engine import default_url, normalize_url

    return server_name(normalize_url(db) if db else default_url())


def _smoke(app, window, started: float) -> int:
    """Wait for the window's first paint, print the time it took, close, exit 0."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    painted: list[float] = []

    class FirstPaint(QObject):
        def eventFilter(self, watched, event) -> bool:
            if event.type() == QEvent.Type.Paint and not painted:
                painted.append(time.perf_counter() - started)
                QTimer.singleShot(0, window.close)
            return False

    spy = FirstPaint()
    window.installEventFilter(spy)
    window.update()
    QTimer.singleShot(SMOKE_TIMEOUT_MS, window.close)
    app.exec()
    if not painted:
        print("headroom: error: the window was not painted", file=sys.stderr)
        return 1
    print(f"first paint after {painted[0]:.3f} s")
    return 0


def _cannot_open(db: str | None, err: Exception) -> int:
    from PySide6.QtWidgets import QMessageBox

    message = f"Cannot open the database {db or ''}: {str(err).splitlines()[0]}"
    print(f"headroom: error: {message}", file=sys.stderr)
    QMessageBox.critical(None, "Headroom", message)
    return 1
