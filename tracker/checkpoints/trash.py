"""Moving checkpoints to the system trash, so a deletion can be undone from the desktop."""

from __future__ import annotations

from pathlib import Path


def to_trash(path: Path) -> str | None:
    """Move ``path`` (file or folder) to the trash; the reason in words when that fails.

    There is no fallback to deleting for good: where no trash is available the
    checkpoint stays, and the user decides what to do.
    """
    from send2trash import send2trash

    try:
        send2trash(str(path))
    except OSError as err:  # TrashPermissionError is an OSError too
        return f"could not move to the trash: {err.strerror or err}"
    return None
