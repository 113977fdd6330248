"""The diagnostics' faces: the findings list and its "why?", the shaded ranges and marks on the
plots, zooming to a finding, the runs table's severity column, re-running, the smallest fix for an OOM."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from sqlalchemy import delete

from core.diagnostics import Finding
from core.runlog import Series
from desktop.models.run_table_model import RunTableModel
from desktop.presenters import findings as present
from desktop.presenters import plot_data
from desktop.presenters.plot_data import PlottedRun
from desktop.presenters.run_columns import COLUMN_INDEX
from desktop.services import SAMPLES
from desktop.views.findings_panel import FindingsPanel
from desktop.views.plots_panel import PlotsPanel
from desktop.widgets.icons import severity_icon
from tests.desktop.helpers import ingest_and_wait
from tracker.db.schema import FindingRow

FSDP = "synthetic-llama3-8b-fsdp-8xh100"
QLORA = "synthetic-llama3-8b-qlora-rtx4090"
SEVERITY = COLUMN_INDEX["severity"]


def _jsonl(path: Path, rows: list[dict], shape: dict | None = None) -> Path:
    """A Headroom JSONL log with these step rows (and events)."""
    header = {"headroom": 1, "run": {"name": path.stem, "shape": shape or {}}}
    path.write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


def _diverged(path: Path) -> Path:
    """Loss falls, then turns NaN at step 60 and never recovers: a critical finding."""
    return _jsonl(path, [{"step": s, "loss": math.nan if s >= 60 else 3 - s / 1000, "lr": 1e-4}
                         for s in range(1, 101)])


def _clean(path: Path) -> Path:
    return _jsonl(path, [{"step": s, "loss": 3 - s / 1000, "lr": 1e-4} for s in range(1, 101)])


def _oom_at_start(path: Path) -> Path:
    shape = {"model": "meta-llama/Llama-3.1-8B", "method": "full", "precision": "mixed-bf16",
             "micro_batch": 4, "seq_len": 4096, "n_gpus": 1, "gpu_model": "RTX 4090"}
    event = {"kind": "oom", "message": "CUDA out of memory. Tried to allocate 1.95 GiB",
             "tried_gib": 1.95, "capacity_gib": 23.6}
    return _jsonl(path, [{"step": 0, "event": event}], shape)


@pytest.fixture
def runs(qtbot, services, tmp_path):
    """Run ids by name: the two synthetic samples, a diverged, a clean and an OOM run."""
    paths = [SAMPLES / f"{FSDP}.jsonl", SAMPLES / f"{QLORA}.jsonl",
             _diverged(tmp_path / "diverged.jsonl"), _clean(tmp_path / "clean.jsonl"),
             _oom_at_start(tmp_path / "oom.jsonl")]
    assert ingest_and_wait(qtbot, services, paths).ok
    return {r.name: r.id for r in services.store.runs()}


@pytest.fixture
def findings(qtbot, services):
    panel = FindingsPanel(services)
    qtbot.addWidget(panel)
    panel.resize(700, 300)
    panel.show()
    return panel


@pytest.fixture
def plots(qtbot, services, settings, composed):
    panel = PlotsPanel(services, settings, composed.compare)
    qtbot.addWidget(panel)
    panel.resize(900, 900)
    panel.show()
    return panel


def _select(qtbot, services, findings, run_ids: list[int], count: int) -> None:
    services.select(run_ids)
    qtbot.waitUntil(lambda: findings.model.rowCount() == count
                    and {findings.model.row(i).run_id for i in range(count)} <= set(run_ids))


def _texts(findings) -> list[tuple[str, str, str]]:
    model = findings.model
    return [tuple(model.index(i, c).data() for c in (0, 1, 3)) for i in range(model.rowCount())]


def test_findings_list_and_why(qtbot, services, findings, runs):
    _select(qtbot, services, findings, [runs[FSDP]], 2)
    rows = _texts(findings)
    assert [r[:2] for r in rows] == [("Loss spike", "3,710–3,730"),
                                     ("Gradient norm explosion", "3,710–3,750")]
    assert rows[0][2].startswith("Loss spiked to 3.184 at step 3710")
    icon = findings.model.index(0, 0).data(Qt.ItemDataRole.DecorationRole)
    assert icon.cacheKey() == severity_icon("warning").cacheKey()
    assert "2 warnings" in findings.heading.text()
    assert "Select a finding" in findings.why.toPlainText()
    findings.table.selectRow(0)
    why = findings.why.toPlainText()
    spike = services.store.findings(runs[FSDP])[0]
    for text in (spike.message, spike.cause, spike.remedy, "Likely cause.", "What to do.",
                 "Noise units", "50.6", "Median before", "1.579", "Recovered", "yes"):
        assert text in why, text
    assert not findings.fix_button.isVisible()


def test_a_clean_run_says_what_was_looked_for(qtbot, services, findings, runs):
    _select(qtbot, services, findings, [runs[FSDP]], 2)
    services.select([runs["clean"]])
    qtbot.waitUntil(lambda: findings.model.rowCount() == 0)
    assert findings.why.toPlainText().startswith("No findings.")
    assert "loss spikes" in findings.why.toPlainText()


def test_findings_shade_their_steps_on_every_panel_and_mark_their_metric(qtbot, services, plots,
                                                                         runs):
    services.select([runs[FSDP]])
    qtbot.waitUntil(lambda: plots.spec is not None and len(plots.panels) > 2)
    for plot in plots.panels:
        regions = sorted(item.getRegion() for _, item in plot.overlays.regions)
        assert regions == [(3710, 3730), (3710, 3750)]
    loss = plots.panels[0]
    x, y = loss.overlays.findings.getData()
    np.testing.assert_array_equal(x, [3710])  # the spike; the gradient norm is not plotted
    stored = services.store.series(runs[FSDP], "loss")
    assert y[0] == stored.values[stored.steps == 3710][0]  # the spike itself, not smoothed
    assert "Loss spike (warning)" in loss.overlays.findings.points()[0].data()


def test_an_info_note_is_shaded_only_when_selected(qtbot, services, findings, plots, runs):
    _select(qtbot, services, findings, [runs[QLORA]], 1)
    qtbot.waitUntil(lambda: plots.spec is not None and bool(plots.panels[0].overlays.regions))
    region, item = plots.panels[0].overlays.regions[0]
    assert (region.x0, region.x1, region.severity) == (5, 1105, "info")
    assert item.brush.color().alpha() == 0
    findings.table.selectRow(0)
    assert item.brush.color().alpha() == 80


def test_selecting_a_finding_zooms_the_plots_and_adds_its_metric(qtbot, services, findings,
                                                                 plots, runs):
    _select(qtbot, services, findings, [runs[FSDP]], 2)
    qtbot.waitUntil(lambda: plots.spec is not None)
    findings.table.selectRow(0)  # the loss spike
    low, high = plots.panels[0].plot.vb.viewRange()[0]
    assert low < 3710 and high > 3730 and high - low < 1000
    focused = [item.brush.color().alpha() for _, item in plots.panels[0].overlays.regions]
    assert sorted(focused) == [28, 80]  # the selected one stands out
    loss_low, loss_high = plots.panels[0].plot.vb.viewRange()[1]
    assert loss_high > 3.1 > 2.0 > loss_low  # fitted to the spike, not to the whole run
    findings.table.selectRow(1)  # the gradient norm explosion: its panel is added
    qtbot.waitUntil(lambda: "grad_norm" in [p.panel.metric for p in plots.panels])
    grad = next(p for p in plots.panels if p.panel.metric == "grad_norm")
    np.testing.assert_array_equal(grad.overlays.findings.getData()[0], [3710])
    assert grad.overlays._focus_label is not None  # its title is shown where it happened
    findings.table.clearSelection()
    findings.table.setCurrentIndex(findings.model.index(-1, -1))
    qtbot.waitUntil(lambda: plots.panels[0].plot.vb.viewRange()[0][1] > 4900)  # whole run


def test_severity_column_sorts_and_filters(qtbot, services, runs):
    model = RunTableModel()
    model.set_runs(services.store.runs())
    worst = {model.run(i).name: model.run(i).severity for i in range(model.rowCount())}
    assert worst == {FSDP: "warning", QLORA: "info", "diverged": "critical", "clean": None,
                     "oom": "critical"}
    for i in range(model.rowCount()):
        icon = model.index(i, SEVERITY).data(Qt.ItemDataRole.DecorationRole)
        assert icon.cacheKey() == severity_icon(model.run(i).severity).cacheKey()
    model.sort(SEVERITY, Qt.SortOrder.DescendingOrder)
    order = [model.run(i).severity for i in range(model.rowCount())]
    assert order == ["critical", "critical", "warning", "info", None]
    from desktop.presenters.run_columns import matches

    assert {model.run(i).name for i in range(5) if matches(model.row(i), "critical")} == {
        "diverged", "oom"}


def test_rerun_diagnostics_brings_findings_back(qtbot, services, findings, runs):
    run_id = runs["diverged"]
    with services.store.session() as s:  # as after an upgrade that dropped them
        s.session.execute(delete(FindingRow).where(FindingRow.run_id == run_id))
    _select(qtbot, services, findings, [run_id], 0)
    assert findings.rerun_button.isEnabled()
    with qtbot.waitSignal(services.sig_findings_changed) as changed:
        findings.rerun_button.click()
    assert changed.args == [[run_id]]
    qtbot.waitUntil(lambda: findings.model.rowCount() == 1)
    assert _texts(findings)[0][:2] == ("Loss NaN/Inf", "60–100")
    assert services.store.severities([run_id]) == {run_id: "critical"}


def test_an_oom_finding_opens_the_smallest_fix(qtbot, services, findings, runs, tmp_path):
    run_id = runs["oom"]
    _select(qtbot, services, findings, [run_id], 1)
    findings.table.selectRow(0)
    assert _texts(findings)[0][0] == "Out of memory at start"
    assert findings.fix_button.isVisible()
    findings.fix_button.click()
    dialog = findings.fix_dialog
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=20_000)
    report = dialog.report
    assert report["run"] == run_id and report["fixes"]  # the same report as headroom fix --json
    assert dialog.table.topLevelItemCount() == len(report["fixes"])
    first = report["fixes"][0]
    assert first["fits"] and first["global_batch"] == report["global_batch"]
    assert first["export"]["plan_hash"] in dialog.config.toPlainText()
    dialog.save(tmp_path / "fix.json")
    assert (tmp_path / "fix.json").read_text() == first["export"]["text"]
    dialog.close()


def test_the_panel_shows_itself_with_news_until_the_user_hides_it(qtbot, services, composed,
                                                                   settings, runs):
    from desktop.main_window import MainWindow

    # The runs are stored and the clean one selected before the window opens: its first load
    # keeps that selection (after an ingest it would select the new runs, some with news).
    services.select([runs["clean"]])
    window = MainWindow(composed, settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == len(runs))
    qtbot.wait(200)
    panel = window.panels["findings"]
    assert services.selected == [runs["clean"]]
    assert not panel.isVisible()  # nothing to say
    window.services.select([runs[FSDP]])
    qtbot.waitUntil(panel.isVisible)
    panel.close_button.click()
    window.services.select([runs["diverged"]])
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1)
    assert not panel.isVisible()  # the user hid it: it stays hidden
    toggle = next(a for a in window.findChildren(QAction) if a.text() == "Findings")
    toggle.trigger()
    assert panel.isVisible()


# ---- Presenters (no Qt)


def test_evidence_reads_as_words():
    assert present.label("lr_ratio_to_usual") == "LR ratio to usual"
    assert present.label("tokens_per_s") == "Tokens/s"
    assert present.label("step_time_s") == "Step time (s)"
    assert present.label("peak_gib") == "Peak GiB"
    assert present.value_text({"model": "llama", "n_gpus": 8}) == "model llama, n gpus 8"
    assert present.value_text(list(range(8))) == "0; 1; 2; 3; 4; … 3 more"
    assert present.value_text(None) == "—" and present.value_text(True) == "yes"
    finding = Finding("loss_plateau", "info", "m", "c", "r", 10, 10)
    assert present.steps_text(finding) == "10"
    whole = Finding("memory_spare", "info", "m", "c", "r")
    assert present.steps_text(whole) == ""
    assert present.summary([finding, whole, Finding("x", "critical", "", "", "")]) == (
        "1 critical, 2 info")


def test_regions_follow_the_x_axis():
    steps = np.arange(0, 101)
    walls = 1_000.0 + steps * 60.0  # a step a minute
    run = PlottedRun(1, "r", {"loss": Series("loss", steps, 3 - steps / 100, wall_time=walls)},
                  findings=[Finding("loss_spike", "warning", "m", "c", "r", 20, 40, "loss",
                                    (20,))])
    by_step = plot_data.build([run], ["loss"], "step").panels[0].annotations
    assert [(r.x0, r.x1) for r in by_step.regions] == [(20, 40)]
    assert [(m.x, m.y) for m in by_step.marks] == [(20, pytest.approx(2.8))]
    relative = plot_data.build([run], ["loss"], "relative")
    assert relative.x_label == "time since start (min)"
    assert [(r.x0, r.x1) for r in relative.panels[0].annotations.regions] == [(20.0, 40.0)]
    wall = plot_data.build([run], ["loss"], "wall").panels[0].annotations
    assert [(r.x0, r.x1) for r in wall.regions] == [(2_200.0, 3_400.0)]


def test_the_sizing_wizard_opens_from_the_fix_dialog(qtbot, window, runs):
    panel = window.panels["findings"]
    window.services.select([runs["oom"]])
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1)
    panel.table.selectRow(0)
    panel.fix_button.click()
    dialog = panel.fix_dialog
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=20_000)  # no search left running
    assert dialog.wizard_button.isEnabled()  # the window's wizard listens
    dialog.wizard_button.click()
    qtbot.waitUntil(lambda: getattr(window, "wizard", None) is not None)
    wizard = window.wizard
    assert wizard.isVisible() and not dialog.isVisible()
    assert wizard.model_page.run_combo.currentData() == runs["oom"]  # its shape fills the draft
    wizard.close()
