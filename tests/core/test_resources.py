"""Finding the shipped data: a checkout's folder, an installed package, or $HEADROOM_RESOURCES."""

from __future__ import annotations

import shutil
import subprocess
import sys

from core.resources import resources_dir
from tests.conftest import ROOT

PROBE = "from core.resources import resources_dir; print(resources_dir())"


def test_a_checkout_uses_its_own_folder(monkeypatch):
    monkeypatch.delenv("HEADROOM_RESOURCES", raising=False)
    assert resources_dir() == ROOT / "resources"
    assert (resources_dir() / "gpus.toml").is_file()


def test_the_environment_variable_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("HEADROOM_RESOURCES", str(tmp_path))
    assert resources_dir() == tmp_path


def _installed_copy(tmp_path, with_data: bool):
    """core/ as pip lays it out in site-packages (no pyproject.toml beside it)."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "core", site / "core", ignore=shutil.ignore_patterns("__pycache__"))
    if with_data:
        (site / "headroom_resources").mkdir()
        (site / "headroom_resources" / "__init__.py").write_text("")
    return site


def _probe(site, tmp_path) -> subprocess.CompletedProcess:
    """resources_dir() in an interpreter that sees only ``site`` (-S: not even this venv's)."""
    code = f"import sys; sys.path.insert(0, {str(site)!r}); {PROBE}"
    return subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)


def test_an_installed_copy_finds_the_package_through_importlib(tmp_path):
    site = _installed_copy(tmp_path, with_data=True)
    done = _probe(site, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(site / "headroom_resources")


def test_an_installed_copy_without_its_data_says_so(tmp_path):
    site = _installed_copy(tmp_path, with_data=False)
    done = _probe(site, tmp_path)
    assert done.returncode == 1
    assert "headroom_resources" in done.stderr and "HEADROOM_RESOURCES" in done.stderr
