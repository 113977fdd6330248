"""Run groups: 3 seeds x 2 learning rates really trained, their bands checked against numpy."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PySide6.QtCore import Qt

from desktop.presenters import formatting as fmt
from desktop.presenters import group_choices, plot_data, plot_readout
from desktop.presenters.groups import Grouping, aggregate, align, group_panels
from desktop.presenters.plot_data import build
from tests.desktop.helpers import ingest_and_wait

LRS = ("5e-3", "1e-3")
SEEDS = (1, 2, 3)
BY_NAME = r"name~-seed\d+"
BY_LR = "config.training_args.learning_rate"


@pytest.fixture(scope="module")
def seeds_and_lrs(tmp_path_factory):
    """Six tiny GPT-2 runs trained with the HF Trainer on the CPU, each recorded by HFCallback."""
    from tests.producers import train_hf
    from tracker.record import HFCallback

    root = tmp_path_factory.mktemp("groups")
    logs = []
    for lr in LRS:
        for seed in SEEDS:
            out = train_hf(root / f"gpt2-lr{lr}-seed{seed}", steps=16, eval_steps=8,
                           save_steps=1000, lr=float(lr), seed=seed, callbacks=[HFCallback()])
            logs.append(out / "headroom.jsonl")
    return logs


@pytest.fixture
def grouped(qtbot, services, seeds_and_lrs):
    report = ingest_and_wait(qtbot, services, seeds_and_lrs)
    assert report.ok
    ids = [r.run_id for r in report.results]
    return ids, services.read_plot_data(ids)


def _stored(store, run_ids, metric):
    """Each run's stored points: (steps, values)."""
    series = [store.series(i, metric) for i in run_ids]
    return series[0].steps, np.vstack([s.values for s in series])


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("by", [BY_NAME, BY_LR])
def test_group_means_and_std_bands_are_numpys_on_the_stored_points(composed, store, grouped,
                                                                   by):
    ids, data = grouped
    compare = composed.compare
    compare.set_grouping(Grouping(by=by))
    assignment = compare.assignment(ids)
    assert sorted(set(assignment.values())) == sorted(
        ["gpt2-lr5e-3", "gpt2-lr1e-3"] if by == BY_NAME else ["0.005", "0.001"])
    spec, groups = group_panels(build(data, ["loss", "lr"]), assignment, Grouping(by=by))
    assert all(not p.curves for p in spec.panels), "members are hidden unless asked for"
    assert [c.metric for c in groups[0]] == ["loss", "loss", "eval_loss", "eval_loss"]
    for curve in groups[0]:
        members = [i for i in ids if assignment[i] == curve.key]
        assert len(members) == 3
        steps, values = _stored(store, members, curve.metric)
        assert np.array_equal(curve.band.x, steps)
        np.testing.assert_allclose(curve.band.centre, values.mean(axis=0), rtol=1e-12)
        spread = values.std(axis=0, ddof=1)
        assert spread.max() > 0, "seeds must differ, or the band tests nothing"
        np.testing.assert_allclose(curve.band.high - curve.band.centre, spread, rtol=1e-9)
        np.testing.assert_allclose(curve.band.centre - curve.band.low, spread, rtol=1e-9)
        assert (curve.band.count == 3).all()


def test_median_minmax_and_interval_bands(store, grouped):
    ids, data = grouped
    steps, values = _stored(store, ids[:3], "loss")
    for stat, band, centre, low, high in (
        ("median", "minmax", np.median(values, 0), values.min(0), values.max(0)),
        ("mean", "p90", values.mean(0), *np.percentile(values, [5, 95], axis=0)),
    ):
        result = aggregate([(steps.astype(float), v) for v in values], stat, band)
        np.testing.assert_allclose(result.centre, centre)
        np.testing.assert_allclose(result.low, low)
        np.testing.assert_allclose(result.high, high)


def test_members_on_different_steps_are_aligned_on_every_point():
    a = (np.array([0.0, 2, 4, 6]), np.array([1.0, 3, 5, 7]))
    b = (np.array([1.0, 3, 5]), np.array([10.0, np.nan, 14]))
    grid, values = align([a, b])
    assert grid.tolist() == [0, 1, 2, 3, 4, 5, 6]
    np.testing.assert_array_equal(values[0], [1, 2, 3, 4, 5, 6, 7])
    # Between its own finite points b is interpolated; its NaN point stays a gap.
    np.testing.assert_array_equal(values[1], [np.nan, 10, 11, np.nan, 13, 14, np.nan])
    band = aggregate([a, b])
    assert band.count.tolist() == [1, 2, 2, 1, 2, 2, 1]
    np.testing.assert_allclose(band.centre, [1, 6, 7, 4, 9, 10, 7])
    np.testing.assert_allclose(band.high[1], 6 + np.std([2, 10], ddof=1))
    assert band.low[0] == band.high[0] == 1, "one member: no spread"


def test_suggestions_offer_the_knob_that_varies_between_groups(services, grouped):
    ids, _ = grouped
    runs = services.runs(ids)
    offered = group_choices.suggestions(runs, services.configs(ids))
    assert offered[:2] == [r"name~[-_.]?seed[-_=]?\d+", r"name~[-_.]?\d+$"]
    assert BY_LR in offered
    assert "config.training_args.seed" in offered  # seeds split the runs 3 ways as well
    assert "name" not in offered and "method" not in offered  # one group, or one run each


def test_plots_panel_draws_bands_and_names_groups(qtbot, services, settings, composed, grouped):
    from desktop.views.plots_panel import PlotsPanel
    from desktop.views.plotting import pg

    ids, _ = grouped
    panel = PlotsPanel(services, settings, composed.compare)
    qtbot.addWidget(panel)
    services.select(ids)
    qtbot.waitUntil(lambda: panel.spec is not None, timeout=10_000)
    panel.groups.bar.choose(BY_NAME)
    assert panel.groups.active
    loss = panel.panels[0].plot
    fills = [i for i in loss.items if isinstance(i, pg.FillBetweenItem)]
    centres = [i for i in loss.items if isinstance(i, pg.PlotDataItem) and i.name()]
    assert len(fills) == 4  # two groups, loss and eval loss
    assert {c.name() for c in centres} == {"gpt2-lr5e-3 (3 runs)", "gpt2-lr1e-3 (3 runs)"}
    assert [name for _key, name, _colour, _tip in panel.legend.entries] == [
        "gpt2-lr5e-3 (3 runs)", "gpt2-lr1e-3 (3 runs)"]
    first = panel.groups._groups[0][0]
    np.testing.assert_allclose(centres[0].getData()[1], first.band.centre)
    rows, _ = plot_readout.rows(panel.spec.panels[0], float(first.band.x[5]))
    row = next(r for r in rows if r.label == first.label)  # read out like a run, with its band
    assert row.value == pytest.approx(first.band.centre[5])
    assert row.text.endswith(f"({fmt.number(first.band.low[5])}–{fmt.number(first.band.high[5])})")
    evals = next(c for c in panel.groups._groups[0] if c.overlay and c.key == first.key)
    rows, _ = plot_readout.rows(panel.spec.panels[0], float(evals.band.x[1]))
    row = next(r for r in rows if r.label == f"{first.label} · eval_loss")  # its own band
    assert row.text.endswith(f"({fmt.number(evals.band.low[1])}–{fmt.number(evals.band.high[1])})")
    out = io.StringIO()
    plot_data.write_csv(out, panel.spec)
    assert f"{first.label},loss," in out.getvalue()
    panel.toolbar.log_x_check.setChecked(True)  # bands and centres on a log x axis
    band = panel.panels[0]._bands[0]
    assert band.low.opts["logMode"][0]
    # What is drawn is clipped to the view (whose re-range to the log axis waits for a paint):
    # whatever the view shows, every drawn x is the log of a step of the band.
    x = band.low.getData()[0]
    assert len(x) and np.isin(np.round(10 ** x, 6), np.round(first.band.x, 6)).all()
    panel.groups.bar.choose("")
    assert not panel.groups.active
    assert len(panel.panels[0].items) == 6  # every run again


def test_groups_table_and_compare_tab_aggregate_the_groups(qtbot, services, composed, store,
                                                           grouped):
    from desktop.presenters import compare
    from desktop.views.compare_view import CompareView
    from desktop.views.groups_panel import GroupsPanel

    ids, _ = grouped
    panel = GroupsPanel(services, composed.compare)
    view = CompareView(services, composed.compare)
    qtbot.addWidget(panel)
    qtbot.addWidget(view)
    services.select(ids)
    composed.compare.set_grouping(Grouping(by=BY_LR))
    assert panel.model.rowCount() == 2 and not panel.isHidden()
    headers = [panel.model.headerData(i, Qt.Orientation.Horizontal)
               for i in range(panel.model.columnCount())]
    assert headers[:4] == ["Group", "Runs", "Steps", "Last loss"]
    for row in range(2):
        key, members = panel.model.row(row).key, panel.model.row(row).run_ids
        last = np.array([store.series(i, "loss").values[-1] for i in members])
        text = panel.model.data(panel.model.index(row, 3))
        assert text == f"{last.mean():.3g} ± {last.std(ddof=1):.3g}", key
    configs = services.configs(ids)
    runs = {r.id: compare.CompareRun(r, configs[r.id]) for r in services.runs(ids)}
    table = [compare.CompareGroup(g, [runs[i] for i in g.run_ids])
             for g in composed.compare.groups(ids)]
    differing = {(r.section, r.key): r.values for r in compare.compare_groups(table)}
    assert differing[("Config", "training_args.learning_rate")] == ("0.005", "0.001")
    assert ("Config", "training_args.seed") not in differing  # varies within, not between
    every = {(r.section, r.key): r.values for r in compare.compare_groups(table, False)}
    assert every[("Config", "training_args.seed")] == ("varies (3 values)",) * 2
    assert every[("Shape", "sequence length")] == ("16", "16")
    view.show()
    qtbot.waitUntil(lambda: view.model.rowCount() > 0)
    assert view.summary.text().startswith(f"2 groups of 6 runs ({BY_LR})")
    with qtbot.waitSignal(composed.compare.sig_select_requested) as asked:
        panel.table.clicked.emit(panel.model.index(1, 0))
    assert sorted(asked.args[0]) == sorted(panel.model.row(1).run_ids)
