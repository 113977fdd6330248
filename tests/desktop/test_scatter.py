"""The summary scatter with the memory model over it, and parallel coordinates with brushing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core.memory import GIB, estimate
from core.memory.from_shape import inputs_from_shape
from desktop.presenters import parallel, scatter
from tests.desktop.helpers import ingest_and_wait
from tracker import query

# Corpus logs that record memory peaks and state their shape, and the two synthetic samples.
MEMORY_LOGS = ("text_logs/megatron_lm", "text_logs/megatron_deepspeed",
               "jsonl/megatron_golden_values", "jsonl/ms_swift", "text_logs/ms_swift")
FSDP = "synthetic-llama3-8b-fsdp-8xh100"


@pytest.fixture
def memory_runs(qtbot, services, corpus):
    paths = [corpus / p for p in MEMORY_LOGS] + [p for p in services.sample_paths()
                                                 if p.suffix == ".jsonl"]
    assert ingest_and_wait(qtbot, services, paths).ok
    return services.store.runs()


def _calibration(store):
    from tracker.calibration import calibrate

    return calibrate(store)[0]


def test_model_curve_passes_through_the_analytical_figure_at_each_plotted_knob(services,
                                                                             memory_runs):
    fsdp = next(r for r in memory_runs if r.name == FSDP)
    found = scatter.scatter(memory_runs, "seq_len", "peak_gib", "method", [fsdp.id],
                            calibration=_calibration(services.store))
    xs = sorted({p.x for p in found.points})
    assert len(xs) >= 4, "runs at several sequence lengths"
    model = found.model
    assert model.run_id == fsdp.id and model.counter == "allocated"
    spec, setup, _ = inputs_from_shape(fsdp.shape)
    for x in xs:
        expected = estimate(spec, replace(setup, seq_len=int(x))).reading("allocated") / GIB
        at = np.flatnonzero(model.x == x)
        assert len(at) == 1 and model.analytical[at[0]] == pytest.approx(expected, rel=1e-12)
    assert np.all(np.diff(model.analytical) > 0), "longer sequences need more memory"
    assert model.calibrated is not None and model.lead == "analytical"
    assert "too few to check" in model.why  # one experiment: not trusted, so it does not lead


def test_the_calibrated_curve_leads_only_when_trusted(services, memory_runs, monkeypatch):
    import core.calibration

    fsdp = next(r for r in memory_runs if r.name == FSDP)
    calibration = _calibration(services.store)
    monkeypatch.setattr(core.calibration, "trust", lambda group: (True, "vouched for"))
    monkeypatch.setattr(core.calibration, "TRUSTED_INTERVAL", 10.0)
    model = scatter.model_curves(fsdp, "seq_len", "peak_gib", [2048, 8192], calibration)
    assert (model.lead, model.why) == ("calibrated", "vouched for")
    spec, setup, _ = inputs_from_shape(fsdp.shape)
    at = int(np.flatnonzero(model.x == 8192)[0])
    own = calibration.predict(spec, setup, "H100 SXM", "allocated")
    assert model.calibrated[at] == pytest.approx(own.gib)


def test_axes_that_are_not_a_knob_and_a_peak_draw_no_model(memory_runs):
    found = scatter.scatter(memory_runs, "final_loss", "peak_gib", "", [memory_runs[0].id])
    assert found.model is None and found.points
    with pytest.raises(Exception, match="no field 'peak_gb'"):
        scatter.scatter(memory_runs, "seq_len", "peak_gb", "", [])


def test_scatter_tab_draws_points_and_curves_and_a_click_selects(qtbot, services, settings, composed,
                                                                memory_runs):
    from desktop.views.scatter_panel import ScatterPanel

    panel = ScatterPanel(services, settings, composed.compare, composed.sizing)
    qtbot.addWidget(panel)
    panel.show()
    fsdp = next(r for r in memory_runs if r.name == FSDP)
    services.select([fsdp.id])
    qtbot.waitUntil(lambda: panel._scatter_view is not None and panel.scatter_view.points
                    is not None, timeout=10_000)
    qtbot.waitUntil(lambda: "analytical" in panel.scatter_view.curves, timeout=20_000)
    x, y = panel.scatter_view.curves["analytical"].getData()
    spec, setup, _ = inputs_from_shape(fsdp.shape)
    for point in panel.scatter_view.points.points():
        at = np.flatnonzero(x == point.pos().x())
        expected = estimate(spec, replace(setup, seq_len=int(point.pos().x())))
        assert y[at[0]] == pytest.approx(expected.allocated / GIB)
    assert "Memory model for synthetic-llama3-8b-fsdp-8xh100" in panel.note.text()
    spot = next(p for p in panel.scatter_view.points.points() if p.data() != fsdp.id)
    with qtbot.waitSignal(composed.compare.sig_select_requested) as asked:
        panel.scatter_view._on_click(panel.scatter_view.points, [spot])
    assert asked.args[0] == [spot.data()]


def test_brushes_become_a_query_that_keeps_exactly_the_brushed_runs(services, memory_runs):
    axes = parallel.axes_for(memory_runs, ("method", "seq_len", "peak_gib"))
    assert [a.field for a in axes] == ["method", "seq_len", "peak_gib"]
    lines = parallel.lines(memory_runs, axes)
    brushes = [parallel.Brush(1, 0.2, 1.0), parallel.Brush(2, 0.15, 0.8)]
    kept = parallel.brushed(lines, brushes)
    assert 0 < kept.sum() < len(kept)
    text = parallel.brush_query(axes, brushes)
    assert text.startswith("seq_len >= ") and " and peak_gib <= " in text
    matched = query.matching_ids(services.store, query.compile(text))
    assert sorted(matched) == sorted(np.array(lines.run_ids)[kept].tolist())
    only_full = [parallel.Brush(0, axes[0].position("full") - 0.01,
                                axes[0].position("full") + 0.01)]
    assert parallel.brush_query(axes, only_full) == 'method in ["full"]'


def test_brushing_the_parallel_view_filters_the_runs_table(qtbot, window, services,
                                                           memory_runs):
    from desktop.models.run_table_model import RUN_ID_ROLE

    panel = window.panels["scatter"]
    window.tabs.setCurrentWidget(panel)
    panel.parallel_button.click()
    qtbot.waitUntil(lambda: panel._parallel_view is not None
                    and panel.parallel_view.lines is not None, timeout=10_000)
    view = panel.parallel_view
    axis = [a.field for a in view.lines.axes].index("peak_gib")
    view.set_brush(axis, 0.5, 1.0)
    edit = window.runs_panel.filter_edit
    qtbot.waitUntil(lambda: edit.text().startswith("peak_gib >= "), timeout=5_000)
    proxy = window.runs_panel.proxy
    shown = {proxy.index(i, 0).data(RUN_ID_ROLE) for i in range(proxy.rowCount())}
    kept = {i for i, k in zip(view.lines.run_ids, view.kept(), strict=True) if k}
    assert shown == kept and 0 < len(kept) < len(memory_runs)
    view.clear_brushes()
    qtbot.waitUntil(lambda: edit.text() == "", timeout=5_000)
