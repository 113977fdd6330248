"""Reading dropped files: local paths out of a drag's MIME data."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData


def local_paths(mime: QMimeData) -> list[Path]:
    """The local files and folders a drag carries (web links and plain text are not paths)."""
    if not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
