"""The Calibration tab over a database of recorded runs: points, groups, outliers, exclusions."""

from __future__ import annotations

import pytest

from core.calibration import held_out_fit
from tests.desktop.helpers import ingest_and_wait
from tests.recorded_runs import COUNTER_SERIES, truth, write_run
from tracker.calibration import EXCLUDED as RUN_EXCLUDED
from tracker.calibration import collect

GROUP = "hf x H100 SXM x sdpa"
RUNS = [("llama-3.2-1b", 2, 2048), ("llama-3.2-3b", 1, 1024), ("llama-3.2-3b", 4, 2048),
        ("qwen2.5-7b", 1, 2048), ("llama-3.1-8b", 2, 2048), ("llama-3.1-8b", 1, 4096)]


@pytest.fixture
def history(tmp_path, qtbot, services):
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, (model, batch, seq) in enumerate(RUNS):
        peaks = {c: truth(model, batch, seq, c) for c in COUNTER_SERIES}
        if i == 5:
            peaks = {c: v * 1.8 for c, v in peaks.items()}  # a run that leaked memory
        write_run(runs, f"run-{i}", model, batch, seq, peaks)
    write_run(runs, "no-architecture", None, 1, 1024, {"allocated": 10.0},
              shape_extra={"model": "my-own-model"})
    assert ingest_and_wait(qtbot, services, [runs]).ok
    return services


@pytest.fixture
def panel(qtbot, history, composed):
    from desktop.views.calibration_panel import CalibrationPanel

    view = CalibrationPanel(composed.sizing)
    qtbot.addWidget(view)
    with qtbot.waitSignal(composed.sizing.sig_calibration_changed, timeout=30_000):
        view.show()
    return view


def _rows(panel) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for i in range(panel.runs.topLevelItemCount()):
        item = panel.runs.topLevelItem(i)
        out.setdefault(item.text(0), []).append([item.text(c) for c in range(item.columnCount())])
    return out


def test_every_reading_is_plotted_held_out_against_its_peak(panel, history):
    expected = held_out_fit(collect(history.store).samples)
    spots = panel.plot.spots(GROUP)
    assert len(spots) == 2 * len(RUNS)  # allocated and reserved of each run
    for recorded, predicted, name in spots:
        sample = next(s for s in expected.samples
                      if s.name == name and s.peak_gib == pytest.approx(recorded))
        assert predicted == pytest.approx(expected.held_out[(sample.run_id, sample.counter)])
    hover = panel.plot.scatters[GROUP].opts["tip"](x=0, y=12.3, data=0)
    assert hover.startswith(panel.plot.points[0].name) and "12.3 GiB" in hover


def test_groups_show_coefficients_errors_and_a_verdict(panel):
    root = panel.groups.topLevelItem(0)
    assert root.text(0) == "all runs" and root.text(1) == str(len(RUNS))
    leaf = root.child(0).child(0).child(0)
    assert leaf.toolTip(0) == "hf × H100 SXM × sdpa" and leaf.text(0) == "sdpa"
    assert leaf.text(4) in ("trusted", "loose", "not better") and "held-out" in leaf.toolTip(4)
    assert "runs calibrate the memory model" in panel.headline.text()


def test_outliers_and_runs_the_fit_cannot_use_are_listed(panel):
    rows = _rows(panel)
    note = 6
    assert all("outlier" in r[note] for r in rows["run-5"])
    assert not any("outlier" in r[note] for r in rows["run-1"])
    assert "no architecture" in rows["no-architecture"][0][note]


def test_excluding_a_run_refits_and_is_kept_in_the_store(qtbot, panel, history, composed):
    before = panel.summary.groups[0].coefficients
    panel.select_run(history.store.find_run("run-5").id)
    assert panel.exclude.isEnabled() and not panel.include.isEnabled()
    with qtbot.waitSignal(composed.sizing.sig_calibration_changed, timeout=30_000):
        panel.exclude.click()
    assert _rows(panel)["run-5"] == [["run-5", "", "", "", "", "", RUN_EXCLUDED, ""]]
    assert panel.summary.groups[0].runs == len(RUNS) - 1
    assert panel.summary.groups[0].coefficients != before
    run_id = history.store.find_run("run-5").id
    assert collect(history.store).skipped[run_id] == RUN_EXCLUDED  # persisted
    panel.select_run(run_id)
    assert panel.include.isEnabled()
    with qtbot.waitSignal(composed.sizing.sig_calibration_changed, timeout=30_000):
        panel.include.click()
    assert panel.summary.groups[0].runs == len(RUNS)


def test_an_empty_database_says_the_figures_are_analytical(qtbot, composed):
    from desktop.views.calibration_panel import CalibrationPanel

    view = CalibrationPanel(composed.sizing)
    qtbot.addWidget(view)
    with qtbot.waitSignal(composed.sizing.sig_calibration_changed, timeout=30_000):
        view.show()
    assert "figures are analytical" in view.headline.text()
    assert view.runs.topLevelItemCount() == 0


def test_the_fit_follows_new_runs(qtbot, panel, history, composed, tmp_path):
    more = tmp_path / "more"
    more.mkdir()
    peaks = {c: truth("qwen2.5-7b", 2, 4096, c) for c in COUNTER_SERIES}
    write_run(more, "run-new", "qwen2.5-7b", 2, 4096, peaks)
    with qtbot.waitSignal(composed.sizing.sig_calibration_changed, timeout=30_000):
        assert ingest_and_wait(qtbot, history, [more]).ok
    assert panel.summary.runs == len(RUNS) + 1 and "run-new" in _rows(panel)


def test_a_fit_asked_for_while_the_database_opens_comes_once_it_is_open(qtbot, store, settings):
    from desktop.composition import compose
    from desktop.services import AppServices

    services = AppServices()  # the window shows before the store opens
    sizing = compose(services, settings).sizing
    assert sizing.calibration() is None
    with qtbot.waitSignal(sizing.sig_calibration_changed, timeout=30_000) as fitted:
        services.open_store(lambda: store, pytest.fail)
    assert fitted.args[0].runs == 0
    services.workers.shutdown()
