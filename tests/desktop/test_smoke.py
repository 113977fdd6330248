from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("torch", "transformers", "tensorboard")


def _run(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HEADROOM_HOME": str(tmp_path)}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_headroom_gui_smoke_exits_zero_after_first_paint(tmp_path):
    done = _run([sys.executable, "-m", "desktop.launcher", "gui", "--smoke"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("first paint after ") and done.stdout.strip().endswith(" s")
    assert not (tmp_path / "headroom.db").exists()  # the smoke run uses a temporary database


def test_opening_the_window_imports_no_heavy_library(tmp_path):
    code = (
        "import json, sys\n"
        "from desktop.app import run_app\n"
        "code = run_app(smoke=True)\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [0, []]


def test_the_window_is_built_before_pyqtgraph_and_pandas_are_imported(tmp_path):
    code = (
        "import json, sys\n"
        "from desktop.app import make_app, open_window\n"
        "app = make_app()\n"
        f"window = open_window({str(tmp_path / 'w.db')!r}, {str(tmp_path / 's.ini')!r})\n"
        "window.repaint()\n"
        "print(json.dumps(sorted(m for m in ('pyqtgraph', 'pandas', 'pyarrow') if m in sys.modules)))\n"
        "window.close()\n"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_the_window_is_built_before_the_database_layer_is_imported(tmp_path):
    code = (
        "import json, sys\n"
        "from desktop.app import make_app\n"
        "from desktop.composition import compose\n"
        "from desktop.main_window import MainWindow\n"
        "from desktop.services import AppServices\n"
        "from desktop.settings import Settings\n"
        "app = make_app()\n"
        f"settings = Settings({str(tmp_path / 's.ini')!r})\n"
        "window = MainWindow(compose(AppServices(), settings), settings)\n"
        "window.show()\n"
        "window.repaint()\n"
        "print(json.dumps(sorted(m for m in ('sqlalchemy', 'alembic') "
        "if m in sys.modules)))\n"
        "window.close()\n"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []  # the store opens after the paint
