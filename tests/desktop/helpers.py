"""Shared steps of the desktop tests."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QUrl


def ingest_and_wait(qtbot, services, paths, timeout: int = 60_000):
    """Start an ingest through the services and return its report when it ends."""
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=timeout) as blocker:
        services.ingest(paths)
    return blocker.args[0]


def mime_with(paths: list[Path]) -> QMimeData:
    """Drag data carrying local file URLs, as a file manager sends them."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime
