"""Application start-up: QApplication, plotting defaults, services, the main window.

``--smoke`` opens the window on a temporary database and settings file, waits
for its first paint, prints how long that took and exits: CI's proof that the
app starts where Qt is installed.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

SMOKE_TIMEOUT_MS = 20_000


def configure_plots() -> None:
    """pyqtgraph's global options, set once before any plot exists."""
    import pyqtgraph as pg

    pg.setConfigOptions(antialias=True, background="w", foreground="#323f4b")


def make_app():
    """The QApplication (created once), named so settings and dialogs say Headroom."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Headroom")
    app.setOrganizationName("Headroom")
    configure_plots()
    return app


def run_app(db: str | None = None, paths: list[str] | None = None, smoke: bool = False) -> int:
    """Open the main window (ingesting ``paths``) and run until it is closed."""
    started = time.perf_counter()
    app = make_app()
    from desktop.main_window import MainWindow
    from desktop.services import AppServices
    from desktop.settings import Settings
    from tracker.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        try:
            store = Store(str(Path(tmp) / "smoke.db") if smoke else db)
        except Exception as err:  # a newer schema, a bad URL, an unreachable server
            return _cannot_open(db, err)
        settings = Settings(Path(tmp) / "settings.ini" if smoke else None)
        window = MainWindow(AppServices(store), settings)
        window.show()
        if paths:
            window.services.ingest(paths)
        if smoke:
            return _smoke(app, window, started)
        # Smoothing uses pandas: importing it now, off the GUI thread, spares the first plot.
        window.services.workers.start(lambda _worker: importlib.import_module("pandas"))
        return app.exec()


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
