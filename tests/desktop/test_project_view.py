"""The Project window: the CLI's figures in the window, editing the TOML, linking a pilot, reports."""

from __future__ import annotations

import json

import pytest

from desktop.presenters import project_view as view
from tests.conftest import ROOT
from tests.desktop.helpers import ingest_and_wait
from tests.recorded_runs import write_run
from tracker.cli import main

CNC = ROOT / "resources" / "projects" / "cnc-maintenance.toml"


@pytest.fixture
def project_window(qtbot, window):
    window.actions_["projects"].trigger()
    w = window.project_window
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.projects.sig_planned, timeout=60_000):
        w.import_file(CNC)
    qtbot.waitUntil(lambda: w.planned is not None)
    return w


def _cells(table) -> list[list[str]]:
    return [[table.item(r, c).text() for c in range(table.columnCount())]
            for r in range(table.rowCount())]


def test_the_window_shows_what_headroom_plan_prints(project_window, capsys):
    assert main(["plan", str(CNC), "--json", "--no-history"]) == 0
    cli = json.loads(capsys.readouterr().out)
    w = project_window
    names = [w.variants.horizontalHeaderItem(c).text() for c in range(w.variants.columnCount())]
    assert names == [v["name"] for v in cli["variants"]]
    rows = {label: cells for label, cells in zip(view.COMPARISON, _cells(w.variants),
                                                 strict=True)}
    assert rows["GPU-days"] == [f"{v['totals']['gpu_days']:.1f}" for v in cli["variants"]]
    assert rows["Cost"] == [view.money(v["totals"]["cost"]) for v in cli["variants"]]
    assert rows["Cards needed"][2] == "16 × H100 SXM"
    for index, variant in enumerate(cli["variants"]):
        w.variant_choice.setCurrentIndex(index)
        for cells, stage in zip(_cells(w.stages), variant["stages"], strict=True):
            row = dict(zip(view.STAGE_HEADERS, cells, strict=True))
            assert row["Stage"] == stage["name"] and row["Status"] == "planned"
            assert row["GPUs"] == f"{stage['gpus']} × {stage['gpu']}"
            assert row["GiB per GPU"].startswith(f"{stage['gib_per_gpu']:.1f} of ")
            assert row["Hours"].startswith(f"{stage['hours']:.1f} (")
            assert row["GPU-hours"] == f"{stage['gpu_hours']:.1f}"
            assert row["Cost"] == view.money(stage["cost"])
    w.variant_choice.setCurrentIndex(0)
    w.stages.selectRow(0)
    assert "Pilot first" in w.details.toHtml() and "qwen2.5-0.5b" in w.details.toPlainText()
    assert w.chart.legend.text().count("■") == 1


def test_the_source_tab_stores_only_what_reads(qtbot, project_window):
    w = project_window
    good = w.editor.toPlainText()
    w.editor.setPlainText(good.replace("epochs = 2", "epoch = 2", 1))
    w.apply_source()  # checked and stored in the pool
    qtbot.waitUntil(lambda: w.error.text() != "")
    assert w.error.text() == ('stage "domain adaptation" in variant "7B base, LoRA", field '
                              '"epoch": unknown field (did you mean \'epochs\'?)')
    assert w.projects.stored(w.chooser.currentData()).source == good
    w.editor.setPlainText(good.replace('tokens = "60M"', 'tokens = "6M"', 1))
    w.apply_source()
    qtbot.waitUntil(lambda: w.error.text() == "")  # cleared once it is stored
    assert 'tokens = "6M"' in w.projects.stored(w.chooser.currentData()).source


def test_linking_a_pilot_marks_the_stage_piloted(qtbot, project_window, services, tmp_path):
    w = project_window
    write_run(tmp_path, "qwen-pilot", "qwen2.5-0.5b", 2, 2048, {"allocated": 20.0},
              shape_extra={"gpu_model": "RTX 4090"})
    report = ingest_and_wait(qtbot, services, [tmp_path])
    run_id = report.results[0].run_id
    services.select([run_id])
    w.stages.selectRow(1)  # instruction tuning
    assert w.link_pilot.isEnabled()
    with qtbot.waitSignal(w.projects.sig_planned, timeout=60_000):
        w.link_selected("pilot")
    qtbot.waitUntil(lambda: w.stages.item(1, view.STAGE_HEADERS.index("Status")).text()
                    == "piloted")
    assert w.stages.item(0, view.STAGE_HEADERS.index("Status")).text() == "planned"
    w.stages.selectRow(1)
    assert "qwen-pilot" in w.details.toPlainText() and "loss_falls" in w.details.toPlainText()


def test_export_writes_markdown_with_the_chart_and_html_in_one_file(project_window, tmp_path):
    w = project_window
    w.export(tmp_path / "cnc.md")
    text = (tmp_path / "cnc.md").read_text()
    assert "# Project: CNC maintenance assistant" in text and "## Variants side by side" in text
    assert "| GPU-days |" in text and "](cnc-chart.png)" in text
    assert (tmp_path / "cnc-chart.png").read_bytes()[:4] == b"\x89PNG"
    w.export(tmp_path / "cnc.html")
    page = (tmp_path / "cnc.html").read_text()
    assert "data:image/png;base64," in page and "three specialists" in page
