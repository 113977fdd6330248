"""pyqtgraph, configured once: every module that draws imports ``pg`` from here.

Importing pyqtgraph costs about 0.3 s, so only the views that draw import this
module, when they are first needed; the window paints before that.
"""

from __future__ import annotations

import pyqtgraph as pg

pg.setConfigOptions(antialias=True, background="w", foreground="#323f4b")

__all__ = ["pg"]
