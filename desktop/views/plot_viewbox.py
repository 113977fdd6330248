"""The mouse on a plot panel, as W&B and TensorBoard users expect it.

Drag draws a box and zooms to it; Shift+drag pans along x; the wheel zooms x
only (Ctrl+wheel zooms y); double-click resets the panel; right-click opens the
panel's menu. The callbacks say what happened, so the panel knows when y is the
user's choice rather than its own fit.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, Qt

from desktop.views.plotting import pg

_LEFT, _RIGHT = Qt.MouseButton.LeftButton, Qt.MouseButton.RightButton
_CTRL, _SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


class PanelViewBox(pg.ViewBox):
    """A view box that zooms boxes and x, resets on double-click and asks for a menu."""

    def __init__(self, on_reset: Callable[[], None], on_menu: Callable[[QPointF], None],
                 on_user_y: Callable[[], None]) -> None:
        super().__init__(enableMenu=False)
        self.setMouseMode(pg.ViewBox.RectMode)
        self._on_reset, self._on_menu, self._on_user_y = on_reset, on_menu, on_user_y

    def wheelEvent(self, ev, axis=None) -> None:  # noqa: N802 (pyqtgraph's names)
        zoom_y = bool(ev.modifiers() & _CTRL)
        if zoom_y:
            self._on_user_y()
        super().wheelEvent(ev, axis=1 if zoom_y else 0)

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: N802
        if ev.button() == _RIGHT:
            ev.ignore()  # right is the menu's button
            return
        if ev.button() == _LEFT and ev.modifiers() & _SHIFT:
            super().mouseDragEvent(ev, axis=0)  # pan along x (pyqtgraph pans with an axis set)
            return
        super().mouseDragEvent(ev, axis)

    def showAxRect(self, ax, **kwargs) -> None:  # noqa: N802
        self._on_user_y()  # a box sets y too: the user's range from now on
        super().showAxRect(ax, **kwargs)

    def mouseClickEvent(self, ev) -> None:  # noqa: N802
        if ev.button() == _RIGHT:
            ev.accept()
            self._on_menu(ev.screenPos())
        elif ev.button() == _LEFT and ev.double():
            ev.accept()
            self._on_reset()
        else:
            super().mouseClickEvent(ev)
