"""`headroom install-desktop-entry`: a launcher entry and icons under $XDG_DATA_HOME, and back out."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys

import pytest

from core.resources import resources_dir
from desktop.desktop_entry import entry_text
from desktop.launcher import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="freedesktop entries are a Linux desktop feature")


def _entry(path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return parser["Desktop Entry"]


def test_install_writes_the_entry_and_icons_and_uninstall_removes_them(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    keep = tmp_path / "applications" / "someone-else.desktop"
    keep.parent.mkdir(parents=True)
    keep.write_text("[Desktop Entry]\n")

    assert main(["install-desktop-entry"]) == 0
    entry = tmp_path / "applications" / "headroom.desktop"
    fields = _entry(entry)
    assert fields["Type"] == "Application" and fields["Name"] == "Headroom"
    assert fields["Icon"] == "headroom" and fields["Terminal"] == "false"
    assert shlex.split(fields["Exec"]) == [sys.executable, "-m", "desktop.launcher", "gui", "%F"]
    assert fields["TryExec"] == sys.executable
    svg = tmp_path / "icons" / "hicolor" / "scalable" / "apps" / "headroom.svg"
    png = tmp_path / "icons" / "hicolor" / "256x256" / "apps" / "headroom.png"
    assert svg.read_bytes() == (resources_dir() / "icons" / "headroom.svg").read_bytes()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {entry}" in capsys.readouterr().out
    validator = shutil.which("desktop-file-validate")  # desktop-file-utils, where installed
    if validator:
        checked = subprocess.run([validator, str(entry)], capture_output=True, text=True)
        assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout

    assert main(["install-desktop-entry", "--uninstall"]) == 0
    assert not entry.exists() and not svg.exists() and not png.exists()
    assert keep.exists()  # only Headroom's own files go
    capsys.readouterr()
    assert main(["install-desktop-entry", "--uninstall"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_exec_quotes_paths_with_spaces_and_escapes_as_the_spec_says():
    text = entry_text(["/opt/my apps/bin/python3", "-m", "desktop.launcher"])
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert exec_line == 'Exec="/opt/my apps/bin/python3" -m desktop.launcher gui %F'
    odd = entry_text(['C:\\py$"5%'])
    exec_line = next(line for line in odd.splitlines() if line.startswith("Exec="))
    # Quoted (reserved characters), then \ " $ escaped by a backslash, then every
    # backslash doubled for the string value, and % as %%.
    assert exec_line == 'Exec="C:\\\\\\\\py\\\\$\\\\"5%%" gui %F'
