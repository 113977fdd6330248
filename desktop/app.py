"""Application start-up: QApplication, the main window, and the smoke check."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def run_app(db: str | None = None, paths: list[str] | None = None, smoke: bool = False) -> int:
    """Open the main window; with ``smoke``, on a temporary database, exiting after first paint."""
    started = time.perf_counter()
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

    from tracker.store import Store

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = tempfile.TemporaryDirectory() if smoke else None
    store = Store(str(Path(tmp.name) / "smoke.db") if tmp else db)
    window = QMainWindow()
    window.setWindowTitle("Headroom")
    window.setCentralWidget(QLabel(f"{store.run_count()} runs in {store.display_url}"))
    window.resize(1000, 700)
    window.show()
    if smoke:
        app.processEvents()
        print(f"first paint after {time.perf_counter() - started:.3f} s")
        QTimer.singleShot(0, app.quit)
    code = app.exec()
    store.close()
    if tmp is not None:
        tmp.cleanup()
    return code
