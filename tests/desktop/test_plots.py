from __future__ import annotations

import csv

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage

from core.runlog import RunLog
from core.smoothing import ema
from desktop.services import SAMPLES
from desktop.views.plots_panel import PlotsPanel
from tests.desktop.helpers import ingest_and_wait

FSDP = "synthetic-llama3-8b-fsdp-8xh100"
QLORA = "synthetic-llama3-8b-qlora-rtx4090"


@pytest.fixture
def panel(qtbot, services, settings):
    p = PlotsPanel(services, settings)
    qtbot.addWidget(p)
    p.resize(900, 900)
    p.show()
    return p


@pytest.fixture
def runs(qtbot, services, corpus):
    """Run ids by name: the two synthetic samples and two real HF Trainer runs from the corpus."""
    paths = [SAMPLES / f"{FSDP}.jsonl", SAMPLES / f"{QLORA}.jsonl",
             corpus / "hf_trainer" / "Dheena731__tinyLlama-finetune",
             corpus / "hf_trainer" / "P4P4N1CK__whisper-large-v2-japanese-5k-steps"]
    assert ingest_and_wait(qtbot, services, paths).ok
    return {r.name: r.id for r in services.store.runs()}


def _select(qtbot, panel, services, ids: list[int]) -> None:
    services.select(ids)
    qtbot.waitUntil(lambda: panel.spec is not None
                    and {c.run_id for p in panel.spec.panels for c in p.curves} == set(ids))


def _curve_item(panel, metric: str, run_name: str):
    """The plotted (followed) curve of one run on one metric panel."""
    plot = next(p for p in panel.panels if p.panel.metric == metric)
    return next(item for item in plot.items if item.name() == run_name)


def test_selecting_runs_draws_their_series(qtbot, panel, services, runs):
    panel.smooth_slider.setValue(0)
    names = ["Dheena731__tinyLlama-finetune", FSDP]
    _select(qtbot, panel, services, [runs[n] for n in names])
    assert [p.panel.metric for p in panel.panels][:2] == ["loss", "lr"]
    for name in names:
        stored = services.store.series(runs[name], "loss")
        x, y = _curve_item(panel, "loss", name).getData()
        np.testing.assert_array_equal(x, stored.steps)
        np.testing.assert_array_equal(y, stored.values)
    colours = {item.opts["pen"].color().name() for item in panel.panels[0].items}
    assert len(colours) == 2  # runs are told apart
    assert [panel.legend.items[i][1].text for i in range(2)] == names


def test_smoothing_draws_the_ema_over_a_faint_raw_curve(qtbot, panel, services, runs):
    panel.smooth_slider.setValue(900)
    _select(qtbot, panel, services, [runs[FSDP]])
    qtbot.waitUntil(lambda: panel.spec.panels[0].curves[0].smooth is not None)
    stored = services.store.series(runs[FSDP], "loss")
    x, y = _curve_item(panel, "loss", FSDP).getData()
    np.testing.assert_allclose(y, ema(stored.values, 0.9))
    plot = panel.panels[0].plot
    raw = [i for i in plot.listDataItems() if i.opts["pen"] is not None
           and i.opts["pen"].color().alpha() < 255]
    assert raw and np.array_equal(raw[0].getData()[1], stored.values)


def test_panels_scrolled_out_of_sight_skip_pans_until_seen(qtbot, panel, services, runs):
    panel.resize(900, 300)  # room for about two of the panels
    _select(qtbot, panel, services, [runs[FSDP]])
    assert len(panel.panels) > 3
    qtbot.waitUntil(lambda: panel.panels[0].parked is False and panel.panels[-1].parked)
    last = panel.panels[-1]
    before = [item.curve.getData()[0].copy() for item in last.items]
    panel.panels[0].plot.setXRange(1000, 1200, padding=0)
    assert [len(item.curve.getData()[0]) for item in last.items] == [len(x) for x in before]
    bar = panel.scroll.verticalScrollBar()
    bar.setValue(bar.maximum())
    qtbot.waitUntil(lambda: not last.parked)
    x = last.items[0].curve.getData()[0]
    assert x.min() >= 1000 - 200 and x.max() <= 1200 + 200  # caught up with the pan (clipped)


def test_eval_loss_overlays_the_loss_panel(qtbot, panel, services, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    loss = panel.spec.panels[0]
    assert [c.metric for c in loss.curves] == ["loss", "eval_loss"] and loss.curves[1].overlay
    assert "eval_loss" not in [p.metric for p in panel.spec.panels]


def test_x_axes_tokens_wall_and_relative_time(qtbot, panel, services, runs):
    run_id = runs[FSDP]
    _select(qtbot, panel, services, [run_id])
    tokens = services.store.series(run_id, "tokens_seen")
    loss = services.store.series(run_id, "loss")
    for axis in ("tokens", "wall", "relative"):
        panel.axis_combo.setCurrentIndex(panel.axis_combo.findData(axis))
        x, _ = _curve_item(panel, "loss", FSDP).getData()
        if axis == "tokens":
            np.testing.assert_allclose(x, tokens.values)
        elif axis == "wall":
            np.testing.assert_allclose(x, loss.wall_time)
        else:
            assert panel.spec.x_label == "time since start (h)"
            assert x[0] == 0 and x[-1] == pytest.approx(
                (loss.wall_time[-1] - loss.wall_time[0]) / 3600, rel=0.01)


def test_runs_that_cannot_be_placed_on_an_axis_are_named(qtbot, panel, services, runs):
    hf = "P4P4N1CK__whisper-large-v2-japanese-5k-steps"
    _select(qtbot, panel, services, [runs[FSDP], runs[hf]])
    panel.axis_combo.setCurrentIndex(panel.axis_combo.findData("wall"))
    assert {c.label for p in panel.spec.panels for c in p.curves} == {FSDP}
    assert panel.notes.isVisibleTo(panel) and hf in panel.notes.text()


def test_nan_points_are_marked_and_resumes_drawn(qtbot, panel, services, runs):
    _select(qtbot, panel, services, [runs[FSDP], runs[QLORA]])
    stored = services.store.series(runs[QLORA], "loss")
    nan_steps = stored.steps[~np.isfinite(stored.values)]
    assert len(nan_steps) == 2
    plot = panel.panels[0].plot
    marks = [i for i in plot.listDataItems() if i.opts["symbol"] == "x"]
    np.testing.assert_array_equal(marks[0].getData()[0], nan_steps)
    resumes = [i for i in plot.items if getattr(i, "label", None) is not None]
    assert [line.value() for line in resumes] == [2500]


def test_log_y_and_metric_choice(qtbot, panel, services, settings, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    panel.log_check.setChecked(True)
    assert all(p.plot.getAxis("left").logMode for p in panel.panels)
    panel.set_metrics(["grad_norm", "mem_reserved_gib"])
    assert [p.panel.metric for p in panel.panels] == ["grad_norm", "mem_reserved_gib"]
    assert settings.metrics == ["grad_norm", "mem_reserved_gib"]
    panel.set_metrics([])
    assert [p.panel.metric for p in panel.panels][0] == "loss"


def test_hover_reads_every_runs_value_at_the_cursor(qtbot, panel, services, runs):
    panel.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [runs[FSDP], runs[QLORA]])
    plot = panel.panels[0].plot
    qtbot.waitUntil(lambda: plot.vb.viewRange()[0][1] > 4000)  # auto-range has run
    pos = plot.vb.mapViewToScene(QPointF(1000.4, plot.vb.viewRect().center().y()))
    panel._on_mouse((pos,))
    text = panel.panels[1].readout.toPlainText()  # every panel follows the cursor
    assert "step 1,000" in text and FSDP in text and QLORA in text
    lr = services.store.series(runs[QLORA], "lr")
    assert f"{lr.values[lr.steps == 1000][0]:.4g}" in text


def test_export_png_svg_and_csv_of_the_shown_range(qtbot, panel, services, runs, tmp_path):
    panel.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [runs[FSDP]])
    panel.panels[0].plot.setXRange(1000, 2000, padding=0)
    for suffix in (".png", ".svg", ".csv"):
        panel.export(tmp_path / f"plots{suffix}")
    image = QImage(str(tmp_path / "plots.png"))
    assert image.width() >= 2 * panel.graphics.ci.width() - 2
    assert image.pixelColor(5, 5).name() == "#ffffff"
    svg = (tmp_path / "plots.svg").read_text()
    assert "<svg" in svg and svg.count("<path") > 10 and FSDP in svg  # vectors, legend text
    rows = list(csv.DictReader((tmp_path / "plots.csv").open()))
    loss = [r for r in rows if r["metric"] == "loss"]
    assert {int(r["step"]) for r in loss} == set(range(1000, 2001, 10))
    assert all(r["run"] == FSDP for r in rows)


def test_a_million_points_are_downsampled_with_the_peak_kept(qtbot, panel, services, store):
    from tracker.db import runs as run_store

    n = 1_000_000
    values = 2.0 + np.sin(np.arange(n) / 5000.0)
    values[654_321] = 50.0  # one spike: peak downsampling must keep it
    log = RunLog(format="test", name="huge")
    log.add_series("loss", np.arange(n), values)
    with store.session() as s:
        run_id, _ = run_store.save(s, log, "/x/huge", "huge", [], None)
    panel.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [run_id])
    item = _curve_item(panel, "loss", "huge")
    assert item.opts["autoDownsample"] and item.opts["downsampleMethod"] == "peak"
    assert item.opts["clipToView"]
    plot = panel.panels[0].plot
    plot.setXRange(0, n, padding=0)
    qtbot.waitUntil(lambda: len(item.getData()[0]) < n / 50)
    assert item.getData()[1].max() == 50.0
    plot.setXRange(600_000, 700_000, padding=0)
    qtbot.waitUntil(lambda: item.getData()[0].min() >= 590_000)  # clipped to the view
    x, y = item.getData()
    assert x.max() <= 710_000 and y.max() == 50.0
