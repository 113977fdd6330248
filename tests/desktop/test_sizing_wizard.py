"""The sizing wizard driven page by page with real widgets, checked against core called directly."""

from __future__ import annotations

import base64
import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWizard

from core.gpus import catalog
from core.memory import GIB, Setup, estimate
from core.models import meta_param_count, preset
from core.planner import plan
from desktop.sizing_services import sizing_for
from tests.desktop.helpers import ingest_and_wait
from tests.recorded_runs import COUNTER_SERIES, truth, write_run

MODEL = "qwen2.5-7b"
GPUS = ("RTX 4090", "H100 SXM")


@pytest.fixture
def wizard(qtbot, services, settings):
    from desktop.views.sizing.wizard import SizingWizard

    w = SizingWizard(services, settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: sizing_for(services).summary is not None)
    return w


def _next(qtbot, wizard) -> None:
    button = wizard.button(QWizard.WizardButton.NextButton)
    assert button.isEnabled(), wizard.currentPage().problem.text()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def _choose(combo, value) -> None:
    combo.setCurrentIndex(combo.findData(value))


def _next_enabled(wizard) -> bool:
    return wizard.button(QWizard.WizardButton.NextButton).isEnabled()


def _to_result(qtbot, wizard, model=MODEL, method="lora", batch=2, seq=4096, gpus=GPUS):
    combo = wizard.model_page.preset_combo
    _choose(combo, model)
    combo.activated.emit(combo.currentIndex())  # what a user's pick sends
    _next(qtbot, wizard)
    page = wizard.training_page
    _choose(page.combos["method"], method)
    page.spins["micro_batch"].setValue(batch)
    page.spins["seq_len"].setValue(seq)
    _choose(page.combos["recompute"], "selective")
    _next(qtbot, wizard)
    wizard.hardware_page.tick(list(gpus))
    _next(qtbot, wizard)
    result = wizard.result_page
    qtbot.waitUntil(lambda: not result.planning, timeout=20_000)
    return result


def test_each_page_then_the_result_matches_core(qtbot, wizard):
    result = _to_result(qtbot, wizard)
    spec = preset(MODEL)
    setup = Setup(method="lora", micro_batch=2, seq_len=4096, recompute="selective")
    est = estimate(spec, setup)
    bars = result.chart.bar_data()
    for component, value in est.breakdown.items():
        assert bars[component] == pytest.approx([value / GIB] * 2)
    assert sum(bars[c][0] for c in bars) == pytest.approx(est.device / GIB)
    assert [b.capacity_gib for b in result.bars] == [catalog()[g].memory_gib for g in GPUS]
    expected = plan(spec, setup, [catalog()[g] for g in GPUS], 8)
    assert [(p.gpu, p.layout, round(p.device_gib, 6)) for p in result.plans] == [
        (p.gpu, p.layout, round(p.device_gib, 6)) for p in expected]
    shown = result.plans_table.topLevelItem(0)
    assert shown.text(1) == expected[0].gpu and shown.text(2) == expected[0].layout
    assert "no recorded run" in result.figures.text()  # an empty database: uncalibrated
    assert f"{est.device / GIB:.1f} GiB per GPU" in result.figures.text()


def test_what_if_sliders_redraw_the_bars(qtbot, wizard):
    result = _to_result(qtbot, wizard)
    spec = preset(MODEL)
    result.batch.set_current(8)
    result.seq.set_current(8192)
    est = estimate(spec, Setup(method="lora", micro_batch=8, seq_len=8192, recompute="selective"))
    bars = result.chart.bar_data()
    assert bars["activations"] == pytest.approx([est.breakdown["activations"] / GIB] * 2)
    assert bars["logits"] == pytest.approx([est.breakdown["logits"] / GIB] * 2)
    assert result.batch_label.text() == "8" and result.seq_label.text() == "8,192"
    assert not result.bars[0].fits  # 8 x 8192 tokens of a 7B model do not fit an RTX 4090
    first = lambda: result.plans[0].setup  # noqa: E731
    qtbot.waitUntil(lambda: result.plans and first().micro_batch * first().grad_accum == 8,
                    timeout=20_000)  # plans follow once the sliders rest (same samples per step)


def test_contradictions_are_said_on_the_page_and_block_next(qtbot, wizard):
    _next(qtbot, wizard)
    page = wizard.training_page
    _choose(page.combos["method"], "qlora")
    assert _next_enabled(wizard)  # QLoRA brings its NF4 base
    _choose(page.combos["precision"], "fp32")
    assert not _next_enabled(wizard)
    assert page.problem.isVisible() and "QLoRA keeps the base quantised" in page.problem.text()
    assert "--" not in page.problem.text()  # the form's words, not the command line's
    _choose(page.combos["precision"], "nf4")
    assert _next_enabled(wizard) and not page.problem.isVisible()
    _next(qtbot, wizard)
    hardware = wizard.hardware_page
    hardware.spins["tp"].setValue(3)
    assert not _next_enabled(wizard)
    assert "1 GPU is not a multiple of TP × PP = 3" in hardware.problem.text()
    hardware.spins["per_node"].setValue(3)
    assert "TP 3 does not divide the 32 attention heads" in hardware.problem.text()
    hardware.spins["tp"].setValue(1)
    hardware.tick([])
    assert "Tick at least one GPU" in hardware.problem.text() and not _next_enabled(wizard)
    hardware.recommend.setChecked(True)
    assert _next_enabled(wizard)


def test_a_parameter_count_borrows_a_preset_and_nonsense_is_refused(qtbot, wizard):
    page = wizard.model_page
    qtbot.keyClicks(page.params_edit, "lots")
    assert page.source() == "params" and not _next_enabled(wizard)
    assert "not a parameter count" in page.problem.text()
    page.params_edit.clear()
    qtbot.keyClicks(page.params_edit, "7B")
    assert _next_enabled(wizard)
    assert wizard.draft.spec.total_params == 7_000_000_000
    assert "Borrowed the shape of" in page.resolved.text() and "nearest preset" in (
        page.resolved.text())


def test_a_dropped_config_json_is_counted_on_the_meta_device(qtbot, wizard, tmp_path):
    from tests.desktop.helpers import mime_with

    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
        "intermediate_size": 688, "num_hidden_layers": 3, "num_attention_heads": 8,
        "num_key_value_heads": 4, "vocab_size": 5000, "tie_word_embeddings": False}))
    page = wizard.model_page
    mime = mime_with([config])
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QDropEvent

    page.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                              Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    assert page.source() == "config" and not _next_enabled(wizard)  # counting in the pool
    qtbot.waitUntil(lambda: wizard.draft.spec is not None, timeout=60_000)
    assert wizard.draft.spec.total_params == meta_param_count(config)
    assert f"{meta_param_count(config):,}" in page.resolved.text()
    assert _next_enabled(wizard)
    page.set_config(tmp_path / "missing")
    assert "no config.json" in page.problem.text() and not _next_enabled(wizard)


def test_export_writes_a_report_with_the_chart_and_copy_gives_text(qtbot, wizard, tmp_path):
    result = _to_result(qtbot, wizard)
    result.export(tmp_path / "sizing.md")
    text = (tmp_path / "sizing.md").read_text(encoding="utf-8")
    assert "![Memory per GPU" in text and "(sizing-chart.png)" in text
    assert (tmp_path / "sizing-chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| 1 | " + result.plans[0].gpu in text and f"from preset {MODEL}" in text
    result.export(tmp_path / "sizing.html")
    page = (tmp_path / "sizing.html").read_text(encoding="utf-8")
    data = page.split("data:image/png;base64,")[1].split('"')[0]
    assert base64.b64decode(data)[:4] == b"\x89PNG"
    result.copy_text()
    copied = QGuiApplication.clipboard().text()
    assert "Plans that fit" in copied and MODEL in copied and "|" not in copied


@pytest.fixture
def history(tmp_path, qtbot, services):
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, (model, batch, seq) in enumerate([("llama-3.2-3b", 1, 1024), ("llama-3.2-3b", 4, 2048),
                                             ("qwen2.5-7b", 1, 2048), ("llama-3.1-8b", 2, 2048)]):
        peaks = {c: truth(model, batch, seq, c) for c in COUNTER_SERIES}
        write_run(runs, f"history-{i}", model, batch, seq, peaks)
    assert ingest_and_wait(qtbot, services, [runs]).ok
    return services


def test_recorded_runs_pull_the_calibrated_figure_toward_their_peaks(qtbot, history, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-8b", batch=4, seq=2048,
                        gpus=("H100 SXM",))
    setup = Setup(method="lora", micro_batch=4, seq_len=2048, recompute="selective")
    analytical = estimate(preset("llama-3.1-8b"), setup).reserved / GIB
    found = result.bars[0].calibrated
    # The runs' peaks obey activations x1.25 and a 1 GiB offset: the fit must move toward them.
    recorded_truth = truth("llama-3.1-8b", 4, 2048, "reserved")
    assert abs(found.readings["reserved"] - recorded_truth) < abs(analytical - recorded_truth) / 2
    figures = result.figures.text()
    assert "Calibrated on your runs" in figures and "held-out error" in figures
    ids = {r.name: r.id for r in history.store.runs()}
    assert f"run:{ids['history-3']}'>history-3</a>" in figures
    with qtbot.waitSignal(wizard.sig_open_run) as opened:
        result.figures.linkActivated.emit(f"run:{ids['history-3']}")
    assert opened.args == [ids["history-3"]]


def test_no_recorded_run_near_the_size_says_so(qtbot, history, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-70b", gpus=("H100 SXM",))
    assert result.bars[0].calibrated is None
    assert "no recorded run within 3× this size (nearest: history-3" in result.figures.text()


def test_size_a_run_like_this_fills_in_the_runs_setup(qtbot, history, window):
    ids = {r.name: r.id for r in history.store.runs()}
    qtbot.waitUntil(lambda: window.runs_panel.model.rowCount() == len(ids))  # loaded off-thread
    window.runs_panel.select_ids([ids["history-1"]])
    qtbot.waitUntil(lambda: history.selected == [ids["history-1"]])
    window.actions_["size_like"].trigger()
    wizard = window.wizard
    qtbot.addWidget(wizard)
    assert wizard.model_page.source() == "run"
    assert wizard.draft.spec.name == "llama-3.2-3b" and wizard.draft.method == "lora"
    assert (wizard.draft.micro_batch, wizard.draft.seq_len) == (4, 2048)
    _next(qtbot, wizard)
    assert wizard.training_page.spins["micro_batch"].value() == 4
    _next(qtbot, wizard)
    assert wizard.draft.gpus == ["H100 SXM"]
    with qtbot.waitSignal(wizard.sig_open_run):
        wizard.sig_open_run.emit(ids["history-0"])
    assert history.selected == [ids["history-0"]]
    assert window.tabs.currentWidget() is window.panels["details"]


def test_the_toolbar_opens_the_wizard(qtbot, window):
    from PySide6.QtWidgets import QToolBar

    action = window.actions_["size_run"]
    assert action in window.findChild(QToolBar, "mainToolbar").actions()
    action.trigger()
    qtbot.addWidget(window.wizard)
    assert window.wizard.isVisible() and window.wizard.currentPage() is window.wizard.model_page


def test_recommend_charts_the_best_plan_on_each_gpu(qtbot, wizard):
    _choose(wizard.model_page.preset_combo, "llama-3.1-70b")
    wizard.model_page.preset_combo.activated.emit(wizard.model_page.preset_combo.currentIndex())
    _next(qtbot, wizard)
    _next(qtbot, wizard)
    wizard.hardware_page.recommend.setChecked(True)
    assert not wizard.hardware_page.table.isEnabled()
    _next(qtbot, wizard)
    result = wizard.result_page
    qtbot.waitUntil(lambda: not result.planning and bool(result.bars), timeout=30_000)
    expected = plan(preset("llama-3.1-70b"), Setup(), list(catalog().values()), 8)
    assert result.plans[0].layout == expected[0].layout
    first = result.bars[0]
    assert first.label == f"{expected[0].gpu}\n{expected[0].layout}" and first.fits
    assert len({b.check.gpu.name for b in result.bars}) == len(result.bars)


def test_a_finding_or_the_runs_menu_asks_for_the_wizard_through_the_services(
        qtbot, history, window):
    run_id = history.store.find_run("history-2").id
    assert history.sizing_available() and history.request_sizing(run_id)
    qtbot.addWidget(window.wizard)
    assert window.wizard.model_page.source() == "run"
    assert window.wizard.draft.run_id == run_id and window.wizard.draft.spec.name == "qwen2.5-7b"


def test_the_gpus_and_token_budget_are_remembered(qtbot, services, settings, wizard):
    from desktop.views.sizing.wizard import SizingWizard

    result = _to_result(qtbot, wizard, gpus=("L40S", "H200"))
    result.tokens.setText("2B")
    result.tokens.editingFinished.emit()
    wizard.close()
    assert settings.sizing_gpus == ["L40S", "H200"] and settings.sizing_tokens == 2e9
    again = SizingWizard(services, settings)
    qtbot.addWidget(again)
    assert again.draft.gpus == ["L40S", "H200"] and again.result_page.tokens.text() == "2B"
