"""Presenters are the views' plain-Python half: they import no Qt, so these tests need no display."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_presenter_imports_without_qt():
    names = sorted(p.stem for p in (ROOT / "desktop" / "presenters").glob("*.py") if p.stem != "__init__")
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module('desktop.presenters.' + name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
