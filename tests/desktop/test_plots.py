from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QWheelEvent

from core.runlog import RunLog
from core.smoothing import ema, running_mean
from desktop.composition import compose
from desktop.presenters.plot_data import Band
from desktop.services import SAMPLES, AppServices
from desktop.views.plots_panel import PlotsPanel
from tests.desktop.helpers import ingest_and_wait
from tracker.db import runs as run_store
from tracker.store import Store

FSDP = "synthetic-llama3-8b-fsdp-8xh100"
QLORA = "synthetic-llama3-8b-qlora-rtx4090"
SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload"


@pytest.fixture
def panel(qtbot, services, settings, composed):
    settings.columns = 1
    p = PlotsPanel(services, settings, composed.compare)
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


def _cell(panel, metric: str):
    return next(c for c in panel.cells if c.metric_name == metric)


def _curve_item(panel, metric: str, run_id: int):
    """The plotted (followed) curve of one run on one metric panel."""
    plot = _cell(panel, metric).plot
    return plot._drawn[(run_id, metric, False)].main


def _store_run(store, name: str, **series) -> int:
    log = RunLog(format="test", name=name)
    for metric, (steps, values) in series.items():
        log.add_series(metric, steps, values)
    with store.session() as s:
        return run_store.save(s, log, f"/x/{name}", name, [], None)[0]


def test_selecting_runs_draws_their_series_in_their_own_colours(qtbot, panel, services, runs):
    panel.toolbar.smooth_slider.setValue(0)
    names = ["Dheena731__tinyLlama-finetune", FSDP]
    _select(qtbot, panel, services, [runs[n] for n in names])
    assert [c.metric_name for c in panel.cells][:2] == ["loss", "lr"]
    stored = {r.id: r.colour for r in services.store.runs()}
    for name in names:
        loss = services.store.series(runs[name], "loss")
        item = _curve_item(panel, "loss", runs[name])
        x, y = item.getData()
        np.testing.assert_array_equal(x, loss.steps)
        np.testing.assert_array_equal(y, loss.values)
        assert item.opts["pen"].color().name() == stored[runs[name]]
    assert [name for _key, name, _colour, _tip in panel.legend.entries] == names


def test_a_runs_colour_stays_after_selecting_others_and_after_a_restart(qtbot, panel, services,
                                                                         settings, runs, store):
    fsdp = runs[FSDP]
    _select(qtbot, panel, services, [fsdp])
    first = _curve_item(panel, "loss", fsdp).opts["pen"].color().name()
    _select(qtbot, panel, services, [runs[QLORA], runs["Dheena731__tinyLlama-finetune"], fsdp])
    assert _curve_item(panel, "loss", fsdp).opts["pen"].color().name() == first
    url = store.url
    services.workers.shutdown()
    store.close()
    again = AppServices(Store(url))
    try:
        reopened = PlotsPanel(again, settings, compose(again, settings).compare)
        qtbot.addWidget(reopened)
        reopened.show()
        _select(qtbot, reopened, again, [runs[QLORA], fsdp])
        assert _curve_item(reopened, "loss", fsdp).opts["pen"].color().name() == first
    finally:
        again.workers.shutdown()
        again.store.close()


def test_smoothing_draws_the_ema_over_a_faint_raw_curve(qtbot, panel, services, runs):
    panel.toolbar.smooth_slider.setValue(900)
    _select(qtbot, panel, services, [runs[FSDP]])
    qtbot.waitUntil(lambda: panel.spec.panels[0].curves[0].smooth is not None)
    stored = services.store.series(runs[FSDP], "loss")
    x, y = _curve_item(panel, "loss", runs[FSDP]).getData()
    np.testing.assert_allclose(y, ema(stored.values, 0.9))
    plot = panel.panels[0].plot
    raw = [i for i in plot.listDataItems() if i.opts["pen"] is not None
           and i.opts["pen"].color().alpha() < 255]
    assert raw and np.array_equal(raw[0].getData()[1], stored.values)
    panel.toolbar.kind_combo.setCurrentIndex(panel.toolbar.kind_combo.findData("running"))
    qtbot.waitUntil(lambda: not np.allclose(_curve_item(panel, "loss", runs[FSDP]).getData()[1],
                                            y))
    np.testing.assert_allclose(_curve_item(panel, "loss", runs[FSDP]).getData()[1],
                               running_mean(stored.values, 19))
    assert panel.toolbar.smooth_label.text() == "19 points"
    panel.toolbar.smooth_slider.setValue(999)
    assert panel.smoothing == 0.999  # the top of the slider, where TensorBoard's stops


def test_the_y_range_follows_the_raw_curve_and_can_clip_outliers(qtbot, panel, services, store):
    values = 2.0 + 0.01 * np.sin(np.arange(200))
    values[5] = 40.0  # one early spike
    run_id = _store_run(store, "spiky", loss=(np.arange(200), values))
    panel.toolbar.smooth_slider.setValue(950)
    _select(qtbot, panel, services, [run_id])
    cell = _cell(panel, "loss")
    qtbot.waitUntil(lambda: cell.plot.plot.vb.viewRange()[1][1] > 40)  # the raw spike is in view
    [clip] = [a for a in panel.panel_menu(cell).actions() if a.text().startswith("Clip")]
    clip.trigger()
    low, high = cell.plot.plot.vb.viewRange()[1]
    assert high < 3 and low < 1.99


def test_a_constant_series_is_drawn_around_its_value(qtbot, panel, services, store):
    run_id = _store_run(store, "flat-lr", loss=(np.arange(50), np.linspace(3, 2, 50)),
                        lr=(np.arange(50), np.full(50, 1e-4)))
    _select(qtbot, panel, services, [run_id])
    box = _cell(panel, "lr").plot.plot.vb
    qtbot.waitUntil(lambda: 0 < box.viewRange()[1][0] < 1e-4 < box.viewRange()[1][1] < 2e-4)


def test_panels_without_a_point_are_hidden_and_named(qtbot, panel, services, store):
    run_id = _store_run(store, "nan-norm", loss=(np.arange(20), np.linspace(3, 2, 20)),
                        grad_norm=(np.arange(20), np.full(20, np.nan)))
    _select(qtbot, panel, services, [run_id])
    panel.set_metrics(["loss", "grad_norm"])
    assert [c.metric_name for c in panel.cells] == ["loss"]
    assert "no points to show: grad_norm" in panel.notes.text()


def test_the_mouse_zooms_x_boxes_and_resets_on_double_click(qtbot, panel, services, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    cell = _cell(panel, "loss")
    box = cell.plot.plot.vb
    qtbot.waitUntil(lambda: box.viewRange()[0][1] > 4000)
    (x0, x1), (y0, y1) = box.viewRange()
    centre = cell.view.viewport().rect().center()
    wheel = QWheelEvent(QPointF(centre), QPointF(cell.view.mapToGlobal(centre)), QPoint(0, 0),
                        QPoint(0, 240), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    cell.view.wheelEvent(wheel)
    (z0, z1), (w0, w1) = box.viewRange()
    assert z1 - z0 < 0.9 * (x1 - x0)  # zoomed in x...
    assert _cell(panel, "lr").plot.plot.vb.viewRange()[0] == pytest.approx([z0, z1])  # linked
    assert cell.plot.auto_y  # ...and y is still the panel's own fit, not the wheel's
    box.showAxRect(box.viewRect().adjusted(100, 0, -100, -0.1))  # a drawn box
    assert not cell.plot.auto_y
    cell.reset()  # what a double-click does
    qtbot.waitUntil(lambda: box.viewRange()[0][1] - box.viewRange()[0][0] >= 0.99 * (x1 - x0))
    assert cell.plot.auto_y


def test_the_right_click_menu_offers_the_panels_commands(qtbot, panel, services, settings, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    cell = _cell(panel, "loss")
    menu = panel.panel_menu(cell)
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Reset view\tDouble-click", "Log scale (y)", "Clip outliers (y range)", "Export panel",
        "Hide panel"]
    next(a for a in menu.actions() if a.text() == "Log scale (y)").trigger()
    assert cell.plot.plot.getAxis("left").logMode
    assert not _cell(panel, "lr").plot.plot.getAxis("left").logMode  # per panel
    assert settings.panel_option("log_y") == ["loss"]
    next(a for a in menu.actions() if a.text() == "Hide panel").trigger()
    assert "loss" not in [c.metric_name for c in panel.cells]


def test_grid_columns_and_panel_heights_are_kept(qtbot, panel, services, settings, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    panel.toolbar.columns_combo.setCurrentIndex(2)
    positions = [panel.grid_layout.getItemPosition(panel.grid_layout.indexOf(c))[:2]
                 for c in panel.cells[:4]]
    assert positions == [(0, 0), (0, 1), (0, 2), (1, 0)] and settings.columns == 3
    cell = _cell(panel, "lr")
    cell.resize_to(330)
    cell.resize_done()
    assert settings.panel_height("lr", 0) == 330
    panel.set_metrics(["lr", "loss"])
    assert _cell(panel, "lr").height() == 330


def test_eval_loss_overlays_the_loss_panel(qtbot, panel, services, runs):
    _select(qtbot, panel, services, [runs[FSDP]])
    loss = panel.spec.panels[0]
    assert [c.metric for c in loss.curves] == ["loss", "eval_loss"] and loss.curves[1].overlay
    assert "eval_loss" not in [p.metric for p in panel.spec.panels]


def test_x_axes_tokens_wall_relative_time_and_log_x(qtbot, panel, services, runs):
    run_id = runs[FSDP]
    _select(qtbot, panel, services, [run_id])
    tokens = services.store.series(run_id, "tokens_seen")
    loss = services.store.series(run_id, "loss")
    combo = panel.toolbar.axis_combo
    assert combo.findData("metric:tokens_seen") == -1  # already the tokens axis
    for axis in ("tokens", "wall", "relative"):
        combo.setCurrentIndex(combo.findData(axis))
        x, _ = _curve_item(panel, "loss", run_id).getData()
        if axis == "tokens":
            np.testing.assert_allclose(x, tokens.values)
        elif axis == "wall":
            np.testing.assert_allclose(x, loss.wall_time)
        else:
            assert panel.spec.x_label == "time since start (h)"
            assert x[0] == 0 and x[-1] == pytest.approx(
                (loss.wall_time[-1] - loss.wall_time[0]) / 3600, rel=0.01)
    combo.setCurrentIndex(combo.findData("step"))
    panel.toolbar.log_x_check.setChecked(True)
    assert _cell(panel, "loss").plot.plot.getAxis("bottom").logMode


def test_runs_that_cannot_be_placed_on_an_axis_are_named(qtbot, panel, services, runs):
    hf = "P4P4N1CK__whisper-large-v2-japanese-5k-steps"
    _select(qtbot, panel, services, [runs[FSDP], runs[hf]])
    panel.toolbar.axis_combo.setCurrentIndex(panel.toolbar.axis_combo.findData("wall"))
    assert {c.run_id for p in panel.spec.panels for c in p.curves} == {runs[FSDP]}
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


def test_the_readout_follows_the_cursor_with_every_runs_value(qtbot, panel, services, runs):
    panel.toolbar.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [runs[FSDP], runs[QLORA]])
    cell = _cell(panel, "lr")
    box = cell.plot.plot.vb
    qtbot.waitUntil(lambda: box.viewRange()[0][1] > 4000)
    pos = box.mapViewToScene(QPointF(1000.4, box.viewRect().center().y()))
    panel._on_mouse(cell, pos)
    text = cell.readout.text()
    assert cell.readout.isVisible() and "step 1,000" in text
    assert "fsdp" in text and "qlora" in text  # the names that tell the runs apart
    lr = services.store.series(runs[QLORA], "lr")
    assert f"{lr.values[lr.steps == 1000][0]:.4g}" in text
    assert all(c.plot.cursor.isVisible() for c in panel.cells)  # every panel shows the cursor
    assert not _cell(panel, "loss").readout.isVisible()


def test_the_legend_stays_compact_and_hovering_a_run_highlights_it(qtbot, panel, services,
                                                                    store):
    ids = [_store_run(store, f"sweep-lr{i}e-4-seed{i % 3}", loss=(np.arange(30),
                                                                 np.linspace(3, 2 - i / 100, 30)))
           for i in range(45)]
    _select(qtbot, panel, services, ids)
    assert "and 33 more" in panel.legend.text()
    assert "sweep" not in panel.legend.text().split("and 33")[0]  # the common prefix is gone
    panel.legend.linkHovered.emit("run:3")
    plot = _cell(panel, "loss").plot
    widths = {key[0]: drawn.main.opts["pen"].widthF() for key, drawn in plot._drawn.items()}
    alphas = {key[0]: drawn.main.opts["pen"].color().alpha() for key, drawn in plot._drawn.items()}
    assert widths[ids[3]] > widths[ids[0]] and alphas[ids[0]] < 255 == alphas[ids[3]]
    panel.legend.linkHovered.emit("")
    assert plot._drawn[(ids[0], "loss", False)].main.opts["pen"].color().alpha() == 255


def test_a_contributor_draws_a_band_into_a_panel(qtbot, panel, services, runs):
    def band(spec, shown):
        loss = next(p for p in spec.panels if p.metric == "loss")
        x = loss.curves[0].x
        loss.bands.append(Band(x, np.full(len(x), 0.5), np.full(len(x), 9.0), "#ff0000", "test"))

    _select(qtbot, panel, services, [runs[FSDP]])
    panel.add_contributor(band)
    cell = _cell(panel, "loss")
    shades = [i for i in cell.plot.plot.items if type(i).__name__ == "FillBetweenItem"]
    assert len(shades) == 1 and shades[0].brush().color().name() == "#ff0000"
    qtbot.waitUntil(lambda: cell.plot.plot.vb.viewRange()[1][1] >= 9.0)  # bands count for y
    panel.remove_contributor(band)
    assert not [i for i in _cell(panel, "loss").plot.plot.items
                if type(i).__name__ == "FillBetweenItem"]


def test_a_jobs_gpu_metrics_have_their_own_panels_with_a_band_per_run(qtbot, panel, services,
                                                                      corpus, tmp_path):
    folder = shutil.copytree(corpus / SWIFT, tmp_path / "swift")
    assert ingest_and_wait(qtbot, services, [folder]).ok
    [run] = services.store.runs()
    _select(qtbot, panel, services, [run.id])
    metrics = [c.metric_name for c in panel.cells]
    assert {"mem_used_gib/*", "gpu_util_pct/*", "power_w/*"} <= set(metrics)
    util = next(p for p in panel.spec.panels if p.metric == "gpu_util_pct/*")
    [band] = util.bands
    values = np.vstack([services.store.series(run.id, f"gpu_util_pct/gpu{i}").values
                        for i in range(8)])
    np.testing.assert_allclose(band.high, values.max(axis=0))
    np.testing.assert_allclose(util.curves[0].y, values.mean(axis=0))


def test_export_png_svg_and_csv_of_the_shown_range(qtbot, panel, services, runs, tmp_path):
    panel.toolbar.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [runs[FSDP]])
    panel.panels[0].plot.setXRange(1000, 2000, padding=0)
    for suffix in (".png", ".svg", ".csv"):
        panel.export(tmp_path / f"plots{suffix}")
    image = QImage(str(tmp_path / "plots.png"))
    assert image.width() >= 2 * panel.grid.width() - 2
    assert image.pixelColor(5, image.height() - 5).name() == "#ffffff"
    svg = (tmp_path / "plots.svg").read_text()
    assert "<svg" in svg and svg.count("<polyline") > 10 and "8xh100" in svg  # vectors, legend
    rows = list(csv.DictReader((tmp_path / "plots.csv").open()))
    loss = [r for r in rows if r["metric"] == "loss"]
    assert {int(r["step"]) for r in loss} == set(range(1000, 2001, 10))
    assert all(r["run"] == FSDP for r in rows)
    panel.export(tmp_path / "lr.csv", metric="lr")
    assert {r["metric"] for r in csv.DictReader((tmp_path / "lr.csv").open())} == {"lr"}


def test_a_million_points_are_downsampled_with_the_peak_kept(qtbot, panel, services, store):
    n = 1_000_000
    values = 2.0 + np.sin(np.arange(n) / 5000.0)
    values[654_321] = 50.0  # one spike: peak downsampling must keep it
    run_id = _store_run(store, "huge", loss=(np.arange(n), values))
    panel.toolbar.smooth_slider.setValue(0)
    _select(qtbot, panel, services, [run_id])
    item = _curve_item(panel, "loss", run_id)
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


def test_panels_scrolled_out_of_sight_skip_pans_until_seen(qtbot, panel, services, runs):
    panel.resize(900, 300)  # room for about one of the panels
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


def test_a_plot_cell_shows_as_its_own_window(qtbot):
    """Qt calls ``QWidget.metric()`` to paint a top-level widget: the cell's metric name must
    not hide it (it did, and showing a lone cell raised)."""
    from desktop.views.plot_cell import PlotCell

    cell = PlotCell("loss", 300, lambda *_: None)
    qtbot.addWidget(cell)
    cell.show()
    qtbot.waitExposed(cell)
    cell.grab()
    assert cell.metric_name == "loss" and cell.isVisible() and cell.height() == 300


@pytest.mark.parametrize("wall_axis", [False, True])
def test_the_grid_is_solid_and_behind_the_curves(qtbot, wall_axis):
    """Translucent grid lines cost more than the curves in a pan frame: each is drawn in the
    colour it had over the background, and the axes lie behind the view."""
    from desktop.views.plot_cell import PlotCell
    from desktop.views.plotting import pg

    cell = PlotCell("loss", 300, lambda *_: None, wall_axis=wall_axis)
    qtbot.addWidget(cell)
    cell.view.resize(600, 300)
    plot = cell.plot.plot
    plot.setXRange(1.7e9, 1.7e9 + 86400) if wall_axis else plot.setXRange(0, 1000)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        _, ticks, _ = axis.generateDrawSpecs(pg.QtGui.QPainter())
        colours = {pen.color().getRgb() for pen, _, _ in ticks}
        assert len(ticks) > 3 and all(alpha == 255 for *_, alpha in colours)
        assert len(colours) > 1 and (50, 63, 75, 255) not in colours  # levels faint, not ink
        # Negative z puts an axis behind its plot item, and so behind the view and its curves.
        assert axis.flags() & axis.GraphicsItemFlag.ItemStacksBehindParent
