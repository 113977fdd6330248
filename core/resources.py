"""Where the data shipped with the app lives (GPU catalog, model presets)."""

from __future__ import annotations

import os
from pathlib import Path


def resources_dir() -> Path:
    """The ``resources/`` folder (``$HEADROOM_RESOURCES`` overrides it for packaging)."""
    override = os.environ.get("HEADROOM_RESOURCES")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "resources"
