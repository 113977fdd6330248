"""Desktop tests: headless Qt, real services over a test store, no windows left behind."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("PySide6")


@pytest.fixture(autouse=True)
def _no_leftover_windows(qapp):
    """A test that leaves a visible top-level window behind fails (napari's rule)."""
    before = set(qapp.topLevelWidgets())
    yield
    qapp.processEvents()
    left = [w for w in qapp.topLevelWidgets() if w not in before and w.isVisible()]
    assert not left, f"windows left open: {left}"


@pytest.fixture
def services(store, qtbot):
    from desktop.services import AppServices

    services = AppServices(store)
    yield services
    services.workers.shutdown()


@pytest.fixture
def settings(tmp_path):
    from desktop.settings import Settings

    return Settings(tmp_path / "settings.ini")


@pytest.fixture
def composed(services, settings):
    """Every service of the app around ``services``, as desktop/app.py builds them."""
    from desktop.composition import compose

    return compose(services, settings)


@pytest.fixture
def window(qtbot, composed, settings):
    from desktop.main_window import MainWindow

    w = MainWindow(composed, settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w



@pytest.fixture
def details(qtbot, services):
    from desktop.views.details_panel import DetailsPanel

    panel = DetailsPanel(services)
    qtbot.addWidget(panel)
    panel.show()
    return panel
