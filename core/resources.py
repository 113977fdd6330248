"""Where the data shipped with the app lives: GPU catalog, model presets, sample runs, icons.

An installed Headroom carries the source tree's ``resources/`` folder as the
package ``headroom_resources`` (setup.py maps it) and finds it through
importlib.resources, wherever pip or pipx put it. A source checkout run without
installing (``PYTHONPATH=.``) uses its own folder, so a change to a preset shows
at once. ``$HEADROOM_RESOURCES`` overrides both, for packagers.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

PACKAGE = "headroom_resources"


class ResourcesMissing(RuntimeError):
    """Neither an installed copy nor a checkout of Headroom's data could be found."""


def resources_dir() -> Path:
    """The folder holding ``gpus.toml``, ``models/``, ``samples/`` and ``icons/``."""
    override = os.environ.get("HEADROOM_RESOURCES")
    if override:
        return Path(override)
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "resources").is_dir():
        return root / "resources"  # a source checkout
    try:
        installed = resources.files(PACKAGE)
    except ModuleNotFoundError:
        installed = None
    if not isinstance(installed, Path):  # absent, or inside a zip file
        raise ResourcesMissing(f"Headroom's data ({PACKAGE}) is not installed beside it; "
                               "reinstall Headroom or set HEADROOM_RESOURCES")
    return installed
