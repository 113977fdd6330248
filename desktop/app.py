"""Application start-up: QApplication, services, the main window, one window per database.

The composition root: :func:`open_window` builds the services once
(desktop/composition.py) and hands them to the window. The window shows first;
the database opens after, in the worker pool (importing the ORM and checking
the schema take about half a second), while the window says so.

``--smoke`` opens the window on a temporary settings file and database (or the
one ``--db`` names), waits for its first paint and for the database, prints how
long the first paint took and exits: CI's proof that the app starts where Qt is
installed, and bench/gui.py's launch timing. A launch that finds the app already open on
its database hands its paths to that window and exits (desktop/single_instance.py).

The app logs to ``headroom.log`` in its data folder (Help ▸ Report a Problem names
it). Quitting takes well under half a second (bench/quit.py): the window saves its
layout, background work is asked to stop, the database is closed, and the process
then exits without waiting for a read in progress (each file's ingest is one
transaction, so what it had not committed is simply not there).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path

from desktop.single_instance import InstanceServer, hand_over, server_name

SMOKE_TIMEOUT_MS = 20_000
# A window that is not painted at once (started minimised, on another desktop) opens its
# database after this long anyway.
OPEN_AT_THE_LATEST_MS = 1_000
LOG_FILE = "headroom.log"
LOG_BYTES, LOG_BACKUPS = 1_000_000, 2

log = logging.getLogger("headroom")


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

    if smoke:
        with tempfile.TemporaryDirectory() as tmp:
            window = open_window(db or str(Path(tmp) / "smoke.db"), Path(tmp) / "settings.ini")
            return _smoke(app, window, started)
    log_to_file()
    window = open_window(db, None)
    if paths:
        window.services.ingest(paths)  # read once the database is open
    server = InstanceServer(instance, window)
    server.sig_paths.connect(window.open_paths)
    # Smoothing uses pandas: importing it off the GUI thread once the database is open (not
    # competing with the first paint or the store) spares the first plot.
    window.services.sig_store_ready.connect(lambda: window.services.workers.start(
        lambda _worker: importlib.import_module("pandas")))
    return _exit_now(app.exec())


def open_window(db: str | None, settings_path: Path | None):
    """The main window, shown, on ``db`` (opened after the window paints); a database that
    cannot be opened is said in an error box, and the app quits."""
    from desktop.composition import compose
    from desktop.main_window import MainWindow
    from desktop.services import AppServices
    from desktop.settings import Settings

    settings = Settings(settings_path)
    window = MainWindow(compose(AppServices(), settings), settings)
    window.show()
    after_first_paint(window, lambda: window.services.open_store(
        lambda: _store(db), lambda message: _cannot_open(db, message)), OPEN_AT_THE_LATEST_MS)
    return window


def after_first_paint(window, then: Callable[[], None], at_most_ms: int | None = None) -> None:
    """Call ``then`` once, from the event loop, when ``window`` has finished its first paint
    (or after ``at_most_ms``, when given, if it is not painted by then)."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    called: list[bool] = []

    def once() -> None:
        if not called:
            called.append(True)
            then()

    class FirstPaint(QObject):
        def eventFilter(self, watched, event) -> bool:
            if event.type() == QEvent.Type.Paint:
                watched.removeEventFilter(self)
                QTimer.singleShot(0, once)  # runs once the paint is done
            return False

    window.installEventFilter(FirstPaint(window))
    if at_most_ms is not None:
        QTimer.singleShot(at_most_ms, once)


def _store(db: str | None):
    from tracker.store import Store

    return Store(db)


def log_to_file() -> Path:
    """Send the app's log to ``headroom.log`` in its data folder (kept small); its path."""
    from tracker.db.engine import data_dir

    path = data_dir() / LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS,
                                  encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    from core import __version__

    log.info("Headroom %s started (Python %s)", __version__, sys.version.split()[0])
    return path


def _exit_now(code: int) -> int:
    """Leave at once: the window saved its state and closed the database; a worker still
    reading a log is not waited for (its file's transaction is not committed, so it is not
    there). Python's own teardown of a Qt app takes longer than the rest of quitting."""
    log.info("Headroom quit")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _instance_name(db: str | None) -> str:
    from tracker.db.engine import default_url, normalize_url

    return server_name(normalize_url(db) if db else default_url())


def _smoke(app, window, started: float) -> int:
    """Wait for the window's first paint and its database, print the times, close, exit 0."""
    from PySide6.QtCore import QTimer

    painted: list[float] = []
    opened: list[float] = []

    def took(times: list[float]) -> None:
        times.append(time.perf_counter() - started)
        if painted and opened:
            QTimer.singleShot(0, window.close)

    window.services.sig_store_ready.connect(lambda: took(opened))
    after_first_paint(window, lambda: took(painted))
    window.update()
    QTimer.singleShot(SMOKE_TIMEOUT_MS, window.close)
    app.exec()
    if not (painted and opened):
        print("headroom: error: the window was not "
              + ("painted" if not painted else "given its database"), file=sys.stderr)
        return 1
    print(f"first paint after {painted[0]:.3f} s; database open after {opened[0]:.3f} s")
    return 0


def _cannot_open(db: str | None, why: str) -> None:
    """Say why the database cannot be opened (a newer schema, a bad URL, an unreachable
    server), then quit with status 1."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    message = f"Cannot open the database {db or ''}: {why}"
    print(f"headroom: error: {message}", file=sys.stderr)
    QMessageBox.critical(None, "Headroom", message)
    QApplication.exit(1)
