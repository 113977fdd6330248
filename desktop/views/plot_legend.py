"""The plots' legend: one line of the shown runs, compact however many are selected.

Each run is its colour and short name; hovering one highlights its curves on
every panel. Past :data:`MAX_SHOWN` runs the rest read "and 30 more", their
names in the tooltip, so 45 selected runs never take the plots' room.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Hashable

from PySide6.QtCore import Qt
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QLabel, QToolTip, QWidget

from desktop.presenters.plot_data import PlotSpec

MAX_SHOWN = 12
ENTRY = ("<a href='{key}' style='color:#323f4b; text-decoration:none'>"
         "<span style='color:{colour}'>■</span>&nbsp;\u2060{name}</a>")


class PlotLegend(QLabel):
    """Rich text with a link per run: hover highlights it, the tooltip gives its full name."""

    def __init__(self, on_hover: Callable[[Hashable | None], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent, wordWrap=True, textFormat=Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.setStyleSheet("QLabel { color: #616e7c; }")
        self.entries: list[tuple[Hashable, str, str, str]] = []  # key, name, colour, tip
        self._keys: dict[str, Hashable] = {}
        self._tips: dict[str, str] = {}
        self.linkHovered.connect(lambda link: on_hover(self._keys.get(link)))
        self.linkHovered.connect(self._tip)

    def show_spec(self, spec: PlotSpec | None) -> None:
        """The runs (and contributed lines) the panels draw, in order."""
        entries: dict[Hashable, tuple[Hashable, str, str, str]] = {}
        panels = sorted(spec.panels if spec else [], key=lambda p: bool(p.bands))
        for panel in panels:  # a run's name from a panel of its own curves, if it has one
            for curve in panel.curves:
                if curve.listed and not curve.overlay and curve.run_id not in entries:
                    entries[curve.run_id] = (curve.run_id, curve.label, curve.colour, curve.tip)
        self.entries = list(entries.values())
        self._keys = {f"run:{i}": key for i, (key, *_rest) in enumerate(self.entries)}
        self._tips = {f"run:{i}": tip for i, (*_rest, tip) in enumerate(self.entries)}
        shown = [ENTRY.format(key=f"run:{i}", colour=colour, name=_unbroken(name))
                 for i, (_key, name, colour, _tip) in enumerate(self.entries[:MAX_SHOWN])]
        more = len(self.entries) - MAX_SHOWN
        if more > 0:
            shown.append(f"<span>and {more} more</span>")
        self.setText(" &nbsp;&nbsp; ".join(shown))
        self.setToolTip("\n".join(name for _key, name, _c, _t in self.entries[MAX_SHOWN:]))
        self.setVisible(bool(self.entries))

    def _tip(self, link: str) -> None:
        if link in self._tips:
            QToolTip.showText(QCursor.pos(), self._tips[link], self)


def _unbroken(name: str) -> str:
    """A name the legend never wraps inside (non-breaking spaces and hyphens)."""
    joined = html.escape(name).replace(" ", "&nbsp;").replace("-", "\u2011")
    return joined.replace("…", "…\u2060")  # a word joiner: no break after the ellipsis
