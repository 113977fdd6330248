"""Menus filled when they open: File ▸ Open Recent, Help ▸ User Guide."""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtWidgets import QMenu, QWidget

from desktop.presenters import help_text
from desktop.settings import Settings
from desktop.views import help_dialogs

MAX_TEXT = 70  # characters of a path in the menu (the rest: the tooltip)


class RecentMenu(QMenu):
    """The files and folders opened lately, newest first; a gone one is shown, disabled."""

    def __init__(self, settings: Settings, open_paths: Callable[[list[str]], None],
                 parent: QWidget | None = None) -> None:
        super().__init__("Open &Recent", parent)
        self._settings, self._open = settings, open_paths
        self.setToolTipsVisible(True)
        self.aboutToShow.connect(self.fill)

    def fill(self) -> None:
        self.clear()
        recent = self._settings.recent
        for i, path in enumerate(recent):
            shown = path if len(path) <= MAX_TEXT else "…" + path[-MAX_TEXT + 1:]
            action = self.addAction(f"&{i + 1} {shown}" if i < 9 else shown,
                                    lambda p=path: self._open([p]))
            action.setToolTip(path)
            action.setEnabled(os.path.exists(path))
        if not recent:
            self.addAction("No recent files").setEnabled(False)
        self.addSeparator()
        self.addAction("Clear Menu", self._settings.clear_recent).setEnabled(bool(recent))


class GuideMenu(QMenu):
    """The README's sections, each opening in a window of its own."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__("&User Guide", parent)
        self._window = parent
        self._open: list = []  # keep the open guide windows alive
        self.aboutToShow.connect(self.fill)

    def fill(self) -> None:
        self.clear()
        text, images = help_text.readme()
        for section in help_text.sections(text):
            self.addAction(section.title, lambda s=section: self._open.append(
                help_dialogs.show_section(self._window, s, images)))
        if self.isEmpty():
            self.addAction("The user guide is not installed").setEnabled(False)
