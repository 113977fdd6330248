"""The Qt-free decisions behind the views: curves, columns, differences, shape edits, reports."""

from __future__ import annotations

import io
import math
from datetime import datetime

import numpy as np
import pytest

from core.runlog import Series
from core.shape import RunShape
from desktop.presenters import (
    compare,
    formatting,
    ingest_report,
    plot_axes,
    plot_data,
    plot_ranges,
    plot_readout,
    run_columns,
    shape_fields,
)
from desktop.presenters.run_names import display_names
from tracker.fields import peak_gib
from tracker.ingest import FileResult, IngestReport
from tracker.model import RunSummary, SeriesInfo


def _series(name, steps, values, walls=None):
    return Series(name, np.asarray(steps), np.asarray(values, dtype=float), name,
                  None if walls is None else np.asarray(walls, dtype=float))


def _run(run_id=1, name="a", **series):
    return plot_data.PlottedRun(run_id, name, dict(series))


# ---- Plots


def test_default_panels_follow_the_article_and_what_the_runs_have():
    have = {"loss", "eval_loss", "lr", "mem_reserved_gib", "samples_per_s", "tokens_seen", "epoch"}
    assert plot_data.choose_metrics(have) == ["loss", "lr", "mem_reserved_gib", "samples_per_s",
                                              "tokens_seen"]
    assert plot_data.choose_metrics({"eval_loss"}) == ["eval_loss"]
    assert plot_data.choose_metrics(have, ["epoch", "grad_norm"]) == ["epoch"]
    assert plot_data.choose_metrics(have, ["grad_norm"])[0] == "loss"  # nothing chosen exists


def test_build_overlays_eval_and_colours_runs_in_selection_order():
    a = _run(1, "a", loss=_series("loss", [1, 2, 3], [3, 2, 1]),
             eval_loss=_series("eval_loss", [3], [1.5]))
    b = _run(2, "b", loss=_series("loss", [1, 2], [4, 3]))
    spec = plot_data.build([a, b], ["loss"])
    (panel,) = spec.panels
    assert [(c.label, c.metric, c.overlay) for c in panel.curves] == [
        ("a", "loss", False), ("a", "eval_loss", True), ("b", "loss", False)]
    assert panel.curves[0].colour == plot_data.PALETTE[0] == panel.curves[1].colour
    assert panel.curves[2].colour == plot_data.PALETTE[1]
    assert plot_data.build([a], ["loss", "eval_loss"]).panels[0].curves[-1].metric == "loss"


def test_smoothing_applies_to_noisy_measurements_only():
    run = _run(loss=_series("loss", range(5), [5, 1, 5, 1, 5]),
               eval_loss=_series("eval_loss", [4], [2.0]),
               lr=_series("lr", range(5), [0, 1, 2, 2, 1]))
    loss, lr = plot_data.build([run], ["loss", "lr"], smoothing=0.5).panels
    assert loss.curves[0].smooth is not None and loss.curves[0].smooth[1] == pytest.approx(
        (0.5 * 5 * 0.5 + 0.5 * 1) / (1 - 0.25))
    assert loss.curves[1].smooth is None  # the eval overlay
    assert lr.curves[0].smooth is None  # a schedule is exact


def test_each_curve_is_smoothed_once_while_its_data_stays():
    loss = _series("loss", range(5), [5, 1, 5, 1, 5])
    a, b = _run(1, "a", loss=loss), _run(2, "b", loss=_series("loss", range(3), [2, 1, 2]))
    cache = plot_data.SmoothingCache()
    first = plot_data.build([a], ["loss"], smoothing=0.5, cache=cache).panels[0].curves[0].smooth
    again = plot_data.build([a, b], ["loss"], smoothing=0.5, cache=cache).panels[0].curves
    assert again[0].smooth is first  # another run selected: the first is not smoothed again
    reloaded = _run(1, "a", loss=_series("loss", range(5), [5, 1, 5, 1, 4]))
    fresh = plot_data.build([reloaded], ["loss"], smoothing=0.5, cache=cache).panels[0].curves[0]
    assert fresh.smooth is not first and fresh.smooth[-1] != first[-1]  # new data, new smoothing
    heavier = plot_data.build([reloaded], ["loss"], smoothing=0.9, cache=cache).panels[0].curves[0]
    assert heavier.smooth[1] != fresh.smooth[1]  # another weight is another curve
    plot_data.build([b], ["loss"], smoothing=0.9, cache=cache)
    assert plot_data.build([reloaded], ["loss"], smoothing=0.9,
                           cache=cache).panels[0].curves[0].smooth is not heavier  # forgotten


def test_nan_and_inf_are_marked_at_the_last_finite_value():
    run = _run(loss=_series("loss", range(6), [math.nan, 2, math.inf, math.nan, 1, 0.5]))
    curve = plot_data.build([run], ["loss"]).panels[0].curves[0]
    assert curve.bad_x.tolist() == [0, 2, 3]
    assert curve.bad_y.tolist() == [2, 2, 2]  # a leading NaN sits at the first finite value


def test_x_axes_map_steps_through_tokens_and_clocks():
    walls = 1000.0 + 10 * np.arange(5)
    run = _run(loss=_series("loss", [0, 10, 20, 30, 40], [5, 4, 3, 2, 1], walls),
               eval_loss=_series("eval_loss", [20, 50], [3.5, 2.0]),  # no clock of its own
               tokens_seen=_series("tokens_seen", [0, 40], [0, 4000]))
    tokens = plot_data.build([run], ["loss"], axis="tokens").panels[0].curves
    assert tokens[0].x.tolist() == [0, 1000, 2000, 3000, 4000]
    assert tokens[1].x.tolist() == [2000]  # step 50 is past the tokens series: left out
    rel = plot_data.build([run], ["loss"], axis="relative")
    assert rel.x_label == "time since start (s)"
    assert rel.panels[0].curves[0].x.tolist() == [0, 10, 20, 30, 40]
    assert plot_data.build([run], ["loss"], axis="wall").panels[0].curves[1].x.tolist() == [1020.0]


def test_runs_without_what_an_axis_needs_are_named_in_a_note():
    clockless = _run(2, "clockless", loss=_series("loss", [1, 2], [2, 1]))
    spec = plot_data.build([clockless], ["loss"], axis="wall")
    assert spec.panels == [] and spec.hidden == ["loss"] and "clockless" in spec.notes[0]
    clockless.tokens_per_step = 4096.0
    tokens = plot_data.build([clockless], ["loss"], axis="tokens")
    assert tokens.panels[0].curves[0].x.tolist() == [4096, 8192] and not tokens.notes


def test_resumes_and_unsorted_steps():
    run = _run(loss=_series("loss", [30, 10, 20], [3, 1, 2]))
    run.resumes = [20]
    panel = plot_data.build([run], ["loss"]).panels[0]
    assert panel.curves[0].x.tolist() == [10, 20, 30] and panel.curves[0].y.tolist() == [1, 2, 3]
    assert panel.resumes == [(20.0, plot_data.PALETTE[0])]


def test_samples_epoch_gpu_hours_and_any_growing_metric_as_the_x_axis():
    walls = 1000.0 + 360 * np.arange(5)
    run = _run(loss=_series("loss", [0, 10, 20, 30, 40], [5, 4, 3, 2, 1], walls),
               epoch=_series("epoch", [0, 40], [0.0, 2.0]),
               consumed=_series("consumed", [0, 20, 40], [0, 100, 400]),
               wobbly=_series("wobbly", [0, 20, 40], [0, 5, 3]))
    run.samples_per_step, run.n_gpus = 64.0, 8
    x = {axis: plot_data.build([run], ["loss"], axis=axis).panels[0].curves[0].x.tolist()
         for axis in ("samples", "epoch", "gpu_hours", "metric:consumed")}
    assert x["samples"] == [0, 640, 1280, 1920, 2560]
    assert x["epoch"] == [0, 0.5, 1.0, 1.5, 2.0]
    assert x["gpu_hours"] == pytest.approx([0, 0.8, 1.6, 2.4, 3.2])  # 6 min x 8 GPUs a point
    assert x["metric:consumed"] == [0, 50, 100, 250, 400]
    axes = plot_axes.choices([run])
    assert "metric:consumed" in axes and "metric:wobbly" not in axes  # only what only grows
    spec = plot_data.build([run], ["loss"], axis="metric:wobbly")
    assert spec.panels == [] and "goes down" in spec.notes[0]
    run.n_gpus = None
    assert "GPU count" in plot_data.build([run], ["loss"], axis="gpu_hours").notes[0]


def test_smoothing_kinds_and_a_family_of_per_gpu_metrics():
    run = _run(loss=_series("loss", range(6), [5, 1, 5, 1, 5, 1]),
               **{f"power_w/gpu{i}": _series(f"power_w/gpu{i}", range(3), [100 + i, 200, 300])
                  for i in range(2)})
    running = plot_data.build([run], ["loss"], smoothing=0.6, kind="running").panels[0]
    assert running.curves[0].smooth[3] == pytest.approx(np.mean([5, 1, 5, 1]))
    assert "power_w/*" in plot_data.choose_metrics(run.series)
    (family,) = plot_data.build([run], ["power_w/*"]).panels
    (band,) = family.bands
    assert family.curves[0].y.tolist() == [100.5, 200, 300] and family.curves[0].smooth is None
    assert band.low.tolist() == [100, 200, 300] and band.high.tolist() == [101, 200, 300]
    assert family.curves[0].label == "a (2 GPUs)"


def test_a_runs_stored_colour_is_its_colour_whatever_else_is_shown():
    a = _run(1, "a", loss=_series("loss", [1, 2], [2, 1]))
    b = _run(2, "b", loss=_series("loss", [1, 2], [3, 1]))
    b.colour = "#123456"
    for runs in ([b], [a, b], [b, a]):
        curves = plot_data.build(runs, ["loss"]).panels[0].curves
        assert next(c for c in curves if c.run_id == 2).colour == "#123456"


def test_y_limits_from_raw_points_in_view_clipped_padded_and_log():
    steps = np.arange(200)
    values = np.full(200, 2.0) + 0.01 * np.sin(steps)
    values[3] = 50.0
    run = _run(loss=_series("loss", steps, values), lr=_series("lr", steps, np.full(200, 1e-4)))
    loss, lr = plot_data.build([run], ["loss", "lr"], smoothing=0.9).panels
    assert plot_ranges.y_limits(loss)[1] > 50  # the raw spike, not the smoothed curve's top
    low, high = plot_ranges.y_limits(loss, clip=True)
    assert high < 2.1 and low > 1.9
    assert plot_ranges.y_limits(loss, (10, 199))[1] < 2.1  # only what is in view
    assert plot_ranges.y_limits(lr) == pytest.approx((0.9e-4, 1.1e-4))  # around its value
    assert plot_ranges.y_limits(lr, log=True) == pytest.approx((-4.1, -3.9))
    assert plot_ranges.y_limits(loss, (500, 600)) is None


def test_the_readout_lists_runs_highest_first_and_sparse_overlays_only_near_their_points():
    a = _run(1, "a", loss=_series("loss", range(0, 100, 10), np.linspace(3, 2, 10)),
             eval_loss=_series("eval_loss", [50], [2.6]))
    b = _run(2, "b", loss=_series("loss", range(0, 100, 10), np.linspace(4, 3, 10)))
    panel = plot_data.build([a, b], ["loss"]).panels[0]
    rows, more = plot_readout.rows(panel, 48, near=1)
    assert [r.label for r in rows] == ["b", "a"] and more == 0
    rows, _ = plot_readout.rows(panel, 50, near=1)
    assert [r.label for r in rows] == ["b", "a · eval_loss", "a"]
    rows, more = plot_readout.rows(panel, 50, near=1, limit=1)
    assert len(rows) == 1 and more == 2


def test_display_names_keep_what_differs_and_tell_equal_names_apart_by_folder():
    names = ["fyh2001__sft__p0_full_epoch/logging", "fyh2001__sft__p0_full_epoch/stdout"]
    assert display_names(names, ["/a", "/b"]) == ["…logging", "…stdout"]
    assert display_names(["sweep-lr1e-3-seed0", "sweep-lr3e-4-seed0"], ["/a", "/b"]) == [
        "…lr1e-3…", "…lr3e-4…"]
    paths = ["/r/a/lightning_logs/version_0", "/r/b/lightning_logs/version_0",
             "/r/b/lightning_logs/version_1"]
    assert display_names(["version_0", "version_0", "version_1"], paths) == [
        "version_0 (a)", "version_0 (b)", "version_1"]
    assert display_names(["only-run"], ["/x"]) == ["only-run"]


@pytest.mark.parametrize("span, unit", [(59, "s"), (119, "s"), (120, "min"), (7199, "min"),
                                        (7200, "h"), (3 * 86400, "days")])
def test_time_unit(span, unit):
    assert plot_axes.time_unit(span)[0] == unit


def test_nearest_point_within_the_curve_only():
    x = np.array([0.0, 10.0, 20.0])
    found = [plot_data.nearest(x, at) for at in (0, 4.9, 5.1, 20, 20.5, -1)]
    assert found == [0, 0, 1, 2, None, None]
    assert plot_data.nearest(np.array([]), 1.0) is None


def test_csv_holds_the_points_in_view_with_smoothing():
    run = _run(2, "r", loss=_series("loss", [1, 2, 3, 4], [4.0, 3.0, math.nan, 1.0]))
    spec = plot_data.build([run], ["loss"], smoothing=0.5)
    out = io.StringIO()
    assert plot_data.write_csv(out, spec, (2, 3)) == 2
    lines = out.getvalue().splitlines()
    assert lines[0] == "run,metric,step,value,smoothed"
    assert lines[1:] == ["r,loss,2,3,3.3333333333333335", "r,loss,3,nan,nan"]


# ---- Runs table


def _summary(run_id=1, **kw):
    base = dict(id=run_id, name=f"run{run_id}", format="hf_trainer", source_path="/x",
                started_at=None, ingested_at=datetime(2025, 1, 1), status="finished", notes="",
                shape=RunShape())
    return RunSummary(**{**base, **kw})


def _info(name, last=None, minimum=None, maximum=None, last_step=100):
    return SeriesInfo(10, 0, last_step, minimum, maximum, last, None, id=1, name=name,
                      original_name=name)


def test_columns_read_summaries_without_points():
    shape = RunShape(model="meta-llama/Llama-3.1-8B", n_gpus=8, gpu_model="H100", method="full")
    run = _summary(shape=shape, tags=["a", "b"], series={
        "loss": _info("loss", last=1.5, minimum=1.2, last_step=5000),
        "eval_loss": _info("eval_loss", minimum=1.4, last_step=4000),
        "mem_reserved_gib": _info("mem_reserved_gib", maximum=66.1),
        "tokens_per_s": _info("tokens_per_s", last=47123.4)})
    row = run_columns.make_row(run)
    texts = dict(zip((c.key for c in run_columns.COLUMNS), row.texts, strict=True))
    assert texts == {"name": "run1", "status": "finished", "severity": "", "format": "hf_trainer",
                     "model": "Llama-3.1-8B", "method": "full", "gpus": "8 × H100",
                     "steps": "5,000", "last_loss": "1.5",
                     "min_loss": "1.2", "best_eval": "1.4", "peak_mem": "66.1",
                     "tokens_per_s": "47,123", "started": "", "tags": "a, b"}
    assert run_columns.matches(row, "llama h100") and not run_columns.matches(row, "llama a100")


def test_peak_memory_prefers_allocated():
    both = _summary(series={"mem_peak_gib": _info("mem_peak_gib", maximum=58.0),
                            "mem_reserved_gib": _info("mem_reserved_gib", maximum=66.0)})
    assert peak_gib(both) == 58.0
    assert peak_gib(_summary()) is None


def test_model_label():
    kaggle = RunShape(model="/kaggle/input/gemma-3-1b-it/")
    assert run_columns.model_label(kaggle) == "gemma-3-1b-it"
    assert run_columns.model_label(RunShape(n_params=8_030_000_000)) == "8.0B params"
    assert run_columns.model_label(RunShape()) is None


# ---- Compare


def test_compare_keeps_only_differing_settings_then_results():
    a = _summary(1, shape=RunShape(seq_len=2048, method="lora", lora_rank=8),
                 series={"loss": _info("loss", last=1.0)})
    b = _summary(2, shape=RunShape(seq_len=4096, method="lora"))
    runs = [compare.CompareRun(a, {"optim": {"lr": 1e-4, "betas": [0.9, 0.95]}, "seed": 1}),
            compare.CompareRun(b, {"optim": {"lr": 3e-4, "betas": [0.9, 0.95]}, "seed": 1})]
    rows = compare.compare(runs)
    settings = [(r.section, r.key, r.values) for r in rows if r.section != "Results"]
    assert settings == [("Shape", "lora rank", ("8", "—")),
                        ("Shape", "sequence length", ("2,048", "4,096")),
                        ("Config", "optim.lr", ("0.0001", "0.0003"))]
    results = {r.key: r.values for r in rows if r.section == "Results"}
    assert results["Last loss"] == ("1", "—") and results["Peak GiB"] == ("—", "—")
    everything = compare.compare(runs, only_differences=False)
    assert ("Config", "seed", ("1", "1"), False) in [(r.section, r.key, r.values, r.differs)
                                                    for r in everything]
    assert [r.section for r in rows][:6] == ["Results"] * 6  # what happened comes first


# ---- Shape form


def test_every_shape_field_is_in_the_form_once():
    names = [row.name for _, rows in shape_fields.groups(RunShape()) for row in rows]
    assert sorted(names) == sorted(RunShape.field_names())


def test_form_rows_show_value_and_source():
    shape = RunShape()
    shape.set("seq_len", 4096, "hparams.yaml")
    shape.set("lora_targets", ["q_proj", "v_proj"], "user")
    rows = {r.name: r for _, group in shape_fields.groups(shape) for r in group}
    assert (rows["seq_len"].text, rows["seq_len"].source, rows["seq_len"].label) == (
        "4,096", "hparams.yaml", "sequence length")
    assert (rows["lora_targets"].text, rows["lora_targets"].source) == ("q_proj, v_proj", "you")
    assert rows["hidden"].text == "" and rows["hidden"].source == ""
    assert rows["method"].choices == ("full", "lora", "qlora", "inference")


@pytest.mark.parametrize("name, typed, value", [
    ("n_params", "8B", 8_000_000_000), ("n_params", "8,030,261,248", 8_030_261_248),
    ("n_params", "1.5e9", 1_500_000_000), ("seq_len", " 4096 ", 4096),
    ("gpu_mem_gib", "79.6", 79.6), ("cpu_offload", "yes", True),
    ("sequence_parallel", "False", False), ("method", "QLoRA", "qlora"),
    ("lora_targets", "q_proj, v_proj,", ["q_proj", "v_proj"]),
    ("gpu_model", "H100 SXM", "H100 SXM"),
    ("seq_len", "", None),
])
def test_typed_values_parse(name, typed, value):
    assert shape_fields.parse(name, typed) == value


@pytest.mark.parametrize("name, typed, message", [
    ("seq_len", "long", "sequence length: a whole number"),
    ("n_layers", "1.5", "layers: a whole number"),
    ("method", "dpo", "method: one of full, lora"), ("cpu_offload", "maybe", "yes or no"),
])
def test_bad_values_get_a_one_line_reason(name, typed, message):
    with pytest.raises(ValueError, match=message):
        shape_fields.parse(name, typed)


# ---- Ingest report and formatting


def test_ingest_report_rows_and_summary():
    report = IngestReport([
        FileResult("/logs/a", "ingested", format="hf_trainer", run_name="a", points=1200,
                   warnings=["metric 'x' appears twice"]),
        FileResult("/logs/b.json", "error", "line 3: truncated JSON"),
        FileResult("/logs/c.json", "error", "not a trainer_state.json"),
        FileResult("/logs/d", "duplicate", "unchanged since last ingest"),
    ], cancelled=True, ignored=2)
    rows = ingest_report.rows(report)
    assert rows[0].detail == "1,200 points; warning: metric 'x' appears twice"
    assert rows[1].detail == "line 3: truncated JSON"
    assert ingest_report.summary(report) == (
        "Cancelled: 1 ingested, 1 duplicate, 2 errors, 1 with warnings, 2 other files ignored")


@pytest.mark.parametrize("value, text", [
    (None, ""), (3, "3"), (12030, "12,030"), (2.31456, "2.315"), (3e-4, "0.0003"), (2e-5, "2e-05"),
    (47123.4, "47,123"), (math.nan, "NaN"), (-math.inf, "-Inf"), (True, "yes"),
])
def test_number_format(value, text):
    assert formatting.number(value) == text


def test_compact_and_when():
    assert [formatting.compact(v) for v in (950, 12_300, 1.31e9)] == ["950", "12.3K", "1.31B"]
    assert formatting.when(datetime(2025, 3, 4, 21, 12)) == "2025-03-04 21:12"
