"""Guard against the PySide6 6.12.0 + pyqtgraph crash (docs/design.md, "Known dependency traps").

With that release every plot repaint drops references to None and True until
Python aborts (``none_dealloc``) after about 2,000 repaints. A dependency
upgrade that brings it back fails here instead of in a user's session.
"""

from __future__ import annotations

import sys

import numpy as np
import pyqtgraph as pg

REPAINTS = 3000


class CountingCurve(pg.PlotCurveItem):
    """A curve that counts its paints, so the test knows the plot really was drawn."""

    paints = 0

    def paint(self, *args) -> None:
        self.paints += 1
        super().paint(*args)


def test_repainting_a_plot_keeps_references_to_none_and_true(qtbot, qapp):
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(400, 300)
    widget.show()
    qtbot.waitExposed(widget)
    curve = CountingCurve(np.arange(500.0), np.random.default_rng(0).normal(size=500))
    widget.addItem(curve)
    qapp.processEvents()  # the scene indexes new and changed items in its event loop
    widget.viewport().repaint()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for i in range(REPAINTS):
        if i % 100 == 0:
            curve.setData(np.arange(500.0), np.random.default_rng(i).normal(size=500))
            qapp.processEvents()
        widget.viewport().repaint()  # a synchronous paint of the plot (the widget's own is a no-op)
    assert curve.paints > REPAINTS
    # The leak loses at least one reference per repaint; normal churn is a few dozen either way.
    assert sys.getrefcount(None) > none_before - REPAINTS // 10
    assert sys.getrefcount(True) > true_before - REPAINTS // 10
