"""The result page's "Simulate on the model's code": runs in the pool, shows progress, cancels."""

from __future__ import annotations

import pytest

from core.memory import GIB, Setup
from core.models import preset
from desktop.presenters.sizing_form import Draft
from desktop.views.sizing.simulate_box import SimulateBox
from tests.desktop.test_sizing_wizard import _to_result
from tracker.simulate import simulate

MODEL = "gpt2"


@pytest.fixture
def box(qtbot, composed):
    draft = Draft(spec=preset(MODEL), method="lora", micro_batch=2, seq_len=256)
    widget = SimulateBox(composed.sizing, draft)
    qtbot.addWidget(widget)
    widget.show()
    return widget


def test_simulating_shows_the_figure_beside_the_analytical_one(qtbot, box):
    progress = []
    box.button.click()
    assert box.running and box.cancel_button.isVisible() and not box.button.isEnabled()
    box.worker.signals.progress.connect(lambda done, total, _label: progress.append((done, total)))
    qtbot.waitUntil(lambda: not box.running, timeout=120_000)
    expected = simulate(preset(MODEL), Setup(method="lora", micro_batch=2, seq_len=256))
    assert f"Simulated: {expected.allocated / GIB:.2f} GiB" in box.result.text()
    assert "analytical" in box.result.text() and "backward" in box.result.text()
    assert progress and progress[-1][0] == progress[-1][1]  # the bar ends full
    assert box.button.isEnabled() and not box.cancel_button.isVisible()
    box.stale()
    assert "setup changed" in box.status.text()


def test_cancel_stops_before_the_next_model(qtbot, box):
    box.button.click()
    box.cancel_button.click()
    qtbot.waitUntil(lambda: not box.running, timeout=120_000)
    assert box.status.text() == "Simulation cancelled" and box.result.text() == ""
    assert box.button.isEnabled()


def test_a_layout_it_cannot_simulate_is_said_in_one_line(qtbot, box):
    box.draft.per_node, box.draft.tp = 2, 2
    box.button.click()
    qtbot.waitUntil(lambda: not box.running, timeout=120_000)
    assert box.status.text().startswith("Cannot simulate: tensor and pipeline parallelism are "
                                        "analytical only")


def test_the_result_page_simulates_its_own_draft(qtbot, composed, settings):
    from desktop.views.sizing.wizard import SizingWizard

    wizard = SizingWizard(composed.sizing, settings)
    qtbot.addWidget(wizard)
    wizard.show()
    result = _to_result(qtbot, wizard, model=MODEL, batch=1, seq=256, gpus=("H100 SXM",))
    assert result.simulate_box.draft is result.draft
    result.simulate_box.button.click()
    qtbot.waitUntil(lambda: not result.simulate_box.running, timeout=120_000)
    assert "Simulated:" in result.simulate_box.result.text()
    result.batch.set_current(4)  # a what-if move: the figure no longer describes the draft
    assert "setup changed" in result.simulate_box.status.text()
