"""Render the app icon's PNG sizes from ``resources/icons/headroom.svg``.

The SVG is the source; the PNGs are for launchers and themes that want bitmaps
(the hicolor theme's fixed sizes, which ``headroom install-desktop-entry``
installs). Run after editing the SVG::

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/make_icons.py
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256)


def main() -> None:
    app = QGuiApplication([])  # noqa: F841  (QImage and QPainter need one)
    renderer = QSvgRenderer(str(ICONS / "headroom.svg"))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {ICONS / 'headroom.svg'}")
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = ICONS / f"headroom-{size}.png"
        image.save(str(path))
        print(f"wrote {path.relative_to(ICONS.parents[1])}")


if __name__ == "__main__":
    main()
