"""Runs as jobs in the app: the files of a job in Details, splitting and merging by hand, the
grouped ingest report, run colours, and the filter box's conventions."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt

from desktop import dialogs
from desktop.presenters import ingest_report
from tests.desktop.helpers import ingest_and_wait
from tracker.ingest import FileResult, IngestReport

SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload"


@pytest.fixture
def swift(qtbot, services, corpus, tmp_path) -> int:
    """The ms-swift run with its GPU sampler: one run of two logs."""
    folder = shutil.copytree(corpus / SWIFT, tmp_path / "swift")
    assert ingest_and_wait(qtbot, services, [folder]).ok
    [run] = services.store.runs()
    return run.id


def test_details_list_a_jobs_logs_and_split_one_off(qtbot, services, details, swift):
    services.select([swift])
    model = details.files.model
    heads = [model.item(r, 0).text() for r in range(model.rowCount())]
    assert heads[0].startswith("logging.jsonl (ms_swift): the run's own log")
    assert heads[1].startswith("gpu_metrics.jsonl (gpu_sampler): GPU sampler: system metrics")
    assert model.item(1, 0).child(0, 0).text().endswith("gpu_metrics.jsonl")
    details.files.tree.setCurrentIndex(model.item(1, 0).index())
    assert details.files.split_button.isEnabled()
    details.files.split_button.click()
    qtbot.waitUntil(lambda: services.store.run_count() == 2, timeout=20_000)
    formats = {r.format: r for r in services.store.runs()}
    assert "gpu_util_pct/gpu0" in formats["gpu_sampler"].series
    assert "gpu_util_pct/gpu0" not in formats["ms_swift"].series


def test_the_runs_menu_merges_the_selected_runs(qtbot, window, services, swift):
    [part] = services.store.details(swift).parts
    sampler = services.store.split_part(part.id)
    services.sig_runs_changed.emit()
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == 2)
    window.runs_panel.select_ids([swift, sampler])
    qtbot.waitUntil(lambda: services.selected == [swift, sampler])
    said: list[str] = []  # a plot reading the moving series may say something after it
    services.sig_message.connect(said.append)
    window.runs_panel.merge_selected()
    qtbot.waitUntil(lambda: any("joined" in m for m in said), timeout=20_000)
    assert services.store.run_count() == 1
    assert "gpu_util_pct/gpu0" in services.store.run(swift).series
    assert services.selected == [swift]


def test_a_colour_chosen_for_a_run_is_kept(qtbot, window, services, swift, monkeypatch):
    monkeypatch.setattr(dialogs, "ask_colour", lambda parent, current: "#123456")
    window.runs_panel.select_ids([swift])
    qtbot.waitUntil(lambda: services.selected == [swift])
    window.runs_panel.choose_colour()
    qtbot.waitUntil(lambda: services.store.run(swift).colour == "#123456")
    table = window.runs_panel.model
    qtbot.waitUntil(lambda: table.data(table.index(0, 0), Qt.ItemDataRole.DecorationRole)
                    .name() == "#123456")


def test_escape_clears_the_filter_and_hidden_new_runs_are_announced(qtbot, window, services,
                                                                    corpus):
    panel = window.runs_panel
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / "Dheena731__tinyLlama-finetune"])
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1)
    panel.filter_edit.setText("tinyllama")
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / "Jaong__Checkpoint-of-CPT"])
    qtbot.waitUntil(lambda: "The filter hides 1 new run" in window.statusBar().currentMessage())
    assert panel.proxy.rowCount() == 1
    panel.filter_edit.setFocus()
    qtbot.keyClick(panel.filter_edit, Qt.Key.Key_Escape)
    assert panel.filter_edit.text() == "" and panel.proxy.rowCount() == 2


def test_the_ingest_report_groups_files_under_their_run():
    report = IngestReport([
        FileResult("/r/a/lightning_logs/version_0", "ingested", format="lightning", run_id=1,
                   run_name="a/version_0"),
        FileResult("/r/b/lightning_logs/version_0", "ingested", format="lightning", run_id=1,
                   run_name="a/version_0", reason="joined run 1 (a/version_0)"),
        FileResult("/r/c/golden.json", "error", "not a golden-values file"),
        FileResult("/r/d/golden.json", "ingested", format="megatron_golden", run_id=2,
                   run_name="d"),
    ])
    groups = ingest_report.groups(report)
    assert [g.title for g in groups] == ["Not stored (1 file)", "run 1 · a/version_0 (2 files)",
                                         "run 2 · d (1 file)"]
    assert [r.shown for r in groups[1].rows] == ["a/lightning_logs/version_0",
                                                 "b/lightning_logs/version_0"]
    assert groups[0].rows[0].shown == "c/golden.json"
