"""The sizing wizard driven page by page with real widgets, checked against core called directly."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import QWizard

from core.gpus import catalog
from core.memory import GIB, Setup, estimate
from core.models import meta_param_count, preset
from core.planner import plan
from core.sizing import Sizer
from desktop.presenters.formatting import duration
from desktop.presenters.sizing_plans import BATCH, CHANGES, GPU, HOST_RAM, LAYOUT, NODES, RANK, TIME
from desktop.presenters.sizing_plans import GIB as GIB_COLUMN
from desktop.presenters.sizing_plans import GPUS as GPUS_
from tests.desktop.helpers import ingest_and_wait
from tests.recorded_runs import COUNTER_SERIES, truth, write_run

MODEL = "qwen2.5-7b"
GPUS = ("RTX 4090", "H100 SXM")


@pytest.fixture
def wizard(qtbot, composed, settings):
    from desktop.views.sizing.wizard import SizingWizard

    w = SizingWizard(composed.sizing, settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: composed.sizing.summary is not None)
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
    expected = Sizer(spec).plans(setup, [catalog()[g] for g in GPUS])
    assert [(p.gpu, p.layout, round(p.device_gib, 6)) for p in result.plans] == [
        (p.gpu, p.layout, round(p.device_gib, 6)) for p in expected]
    bars = result.chart.bar_data()
    for component, value in est.breakdown.items():  # the GPUs as asked, then the best plan
        assert bars[component][:2] == pytest.approx([value / GIB] * 2)
    assert sum(bars[c][0] for c in bars) == pytest.approx(est.required / GIB)
    assert [b.capacity_gib for b in result.bars] == [catalog()[g].memory_gib
                                                      for g in (*GPUS, expected[0].gpu)]
    assert result.bars[-1].plan is result.plans[0] and result.selected == 1
    first = result.plans_table.plan_items()[0]
    assert first.text(GPU) == expected[0].gpu and first.isSelected()
    assert "no recorded run" in result.figures.text()  # an empty database: uncalibrated
    assert f"{expected[0].device_gib:.1f} GiB per GPU" in result.figures.text()
    headline = result.headline
    assert headline.text().startswith("As asked it ")
    assert f"; the best plan: 1 × {expected[0].gpu} " in headline.text()
    wrapped = headline.fontMetrics().boundingRect(QRect(0, 0, headline.width(), 1 << 16),
                                                  Qt.TextFlag.TextWordWrap, headline.text())
    assert headline.height() >= wrapped.height() > headline.fontMetrics().lineSpacing()


def test_what_if_sliders_redraw_the_asked_bars(qtbot, wizard):
    result = _to_result(qtbot, wizard)
    spec = preset(MODEL)
    result.batch.set_current(8)
    result.seq.set_current(8192)
    est = estimate(spec, Setup(method="lora", micro_batch=8, seq_len=8192, recompute="selective"))
    for bar in result.bars[:2]:
        shown = dict(bar.segments)
        assert shown["activations"] == pytest.approx(est.breakdown["activations"] / GIB)
        assert shown["logits"] == pytest.approx(est.breakdown["logits"] / GIB)
    ceiling = 1.6 * max(b.capacity_gib for b in result.bars)  # taller bars are cut there
    assert max(sum(h[i] for h in result.chart.bar_data().values()) for i in range(2)) == (
        pytest.approx(ceiling))
    assert result.batch_label.text() == "8" and result.seq_label.text() == "8,192"
    assert not result.bars[0].fits  # 8 x 8192 tokens of a 7B model do not fit an RTX 4090
    first = lambda: result.plans[0].setup  # noqa: E731
    qtbot.waitUntil(lambda: result.plans and first().micro_batch * first().grad_accum == 8,
                    timeout=20_000)  # plans follow once the sliders rest (same samples per step)
    assert result.bars[-1].check.setup == first()  # the plan is drawn as planned


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


def test_the_report_and_config_dialogs_open_where_they_were_last_used(qtbot, wizard, tmp_path,
                                                                        monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    result = _to_result(qtbot, wizard)
    reports, models = tmp_path / "reports", tmp_path / "models"
    reports.mkdir()
    models.mkdir()
    asked: list[str] = []

    def save(parent, title, start, kinds):
        asked.append(start)
        return str(reports / "plan"), kinds.split(";;")[1]  # no suffix: the HTML filter's

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save)
    result._export_dialog()
    result._export_dialog()
    assert (reports / "plan.html").is_file()
    assert Path(asked[0]).parent != reports and Path(asked[1]).parent == reports
    opened: list[str] = []

    def open_(parent, title, start, kinds):
        opened.append(start)
        return str(models / "config.json"), kinds

    monkeypatch.setattr(QFileDialog, "getOpenFileName", open_)
    wizard.model_page._browse()
    wizard.model_page._browse()
    assert opened[1] == str(models)


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
    result = _to_result(qtbot, wizard, model="llama-3.1-8b", batch=2, seq=2048,
                        gpus=("H100 SXM",))
    setup = Setup(method="lora", micro_batch=2, seq_len=2048, recompute="selective")
    analytical = estimate(preset("llama-3.1-8b"), setup)
    asked = result.bars[0]
    found = asked.check.calibrated
    # The runs' peaks obey activations x1.25 and a 1 GiB offset: the fit must move toward them.
    recorded_truth = truth("llama-3.1-8b", 2, 2048, "reserved")
    assert abs(found.readings["reserved"] - recorded_truth) < abs(
        analytical.reserved / GIB - recorded_truth) / 2
    # One figure per verdict: the bar and its verdict rest on the leading figure, the other is
    # a marker named in the line under the headline.
    shown = result.chart.bar_data()
    assert sum(shown[c][0] for c in shown) == pytest.approx(asked.device_gib)
    marker = {"analytical": "calibrated", "calibrated": "analytical"}[asked.lead]
    drawn = result.chart.marker_data()[marker]
    assert drawn[0][1] == pytest.approx(asked.markers[0].gib)
    lead = found.gib if asked.lead == "calibrated" else analytical.required / GIB
    assert asked.device_gib == pytest.approx(lead)
    assert f"{abs(asked.capacity_gib - lead):.1f} GiB" in asked.status
    assert result.note.text().startswith("On H100 SXM, calibrated on your runs ")
    assert found.why in result.note.text()
    result.select_plan(0)  # no plan drawn: the figures are the asked bar's
    ids = {r.name: r.id for r in history.store.runs()}
    figures = result.figures.text()
    assert "Calibrated on your runs" in figures
    assert f"run:{ids['history-3']}'>history-3</a>" in figures
    with qtbot.waitSignal(wizard.sig_open_run) as opened:
        result.figures.linkActivated.emit(f"run:{ids['history-3']}")
    assert opened.args == [ids["history-3"]]


def test_no_recorded_run_near_the_size_says_so(qtbot, history, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-70b", gpus=("H100 SXM",))
    assert result.bars[0].check.calibrated is None
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


def test_recommend_charts_the_best_plan_on_each_gpu_readably(qtbot, wizard):
    _choose(wizard.model_page.preset_combo, "llama-3.1-70b")
    wizard.model_page.preset_combo.activated.emit(wizard.model_page.preset_combo.currentIndex())
    _next(qtbot, wizard)
    _next(qtbot, wizard)
    wizard.hardware_page.recommend.setChecked(True)
    assert not wizard.hardware_page.table.isEnabled()
    _next(qtbot, wizard)
    result = wizard.result_page
    qtbot.waitUntil(lambda: not result.planning and bool(result.bars), timeout=30_000)
    expected = plan(preset("llama-3.1-70b"), Setup(), list(catalog().values()))
    assert result.plans[0].layout == expected[0].layout
    first = result.bars[0]
    assert first.plan is result.plans[0] and first.fits
    assert len({b.check.gpu.name for b in result.bars}) == len(result.bars)
    assert result.headline.text().startswith(
        f"Headroom's pick: {expected[0].n_gpus} × {expected[0].gpu} ")
    # Readable at 1280x800: every GPU named on the axis, no label wider than its bar's place.
    chart = result.chart
    axis = chart.plot.getAxis("bottom")
    metrics = QFontMetrics(axis.style["tickFont"])
    slot = chart.plot.getViewBox().width() / len(result.bars)
    for tick, bar in zip(chart.ticks, result.bars, strict=True):
        assert tick.split("\n")[0] == bar.check.gpu.name
        assert max(metrics.horizontalAdvance(line) for line in tick.split("\n")) < slot * 0.95
    assert axis.height() >= len(chart.ticks[0].split("\n")) * metrics.lineSpacing()


def test_a_finding_or_the_runs_menu_asks_for_the_wizard_through_the_services(
        qtbot, history, window):
    run_id = history.store.find_run("history-2").id
    assert history.sizing_available() and history.request_sizing(run_id)
    qtbot.addWidget(window.wizard)
    assert window.wizard.model_page.source() == "run"
    assert window.wizard.draft.run_id == run_id and window.wizard.draft.spec.name == "qwen2.5-7b"


def test_the_choices_are_remembered_between_openings(qtbot, composed, settings, wizard):
    from desktop.views.sizing.wizard import SizingWizard

    page = wizard.model_page
    qtbot.keyClicks(page.params_edit, "13B")
    _next(qtbot, wizard)
    training = wizard.training_page
    _choose(training.combos["method"], "qlora")
    training.spins["micro_batch"].setValue(3)
    training.spins["samples"].setValue(52_000)
    _next(qtbot, wizard)
    wizard.hardware_page.tick(["L40S", "H200"])
    _next(qtbot, wizard)
    qtbot.waitUntil(lambda: not wizard.result_page.planning, timeout=20_000)
    wizard.close()
    assert settings.sizing_gpus == ["L40S", "H200"]
    again = SizingWizard(composed.sizing, settings)
    qtbot.addWidget(again)
    again.show()
    assert again.model_page.source() == "params" and again.model_page.params_edit.text() == "13B"
    assert again.draft.spec.total_params == 13e9
    assert (again.draft.method, again.draft.micro_batch, again.draft.samples) == (
        "qlora", 3, 52_000)
    again.next()
    assert again.training_page.combos["method"].currentData() == "qlora"
    assert again.training_page.spins["micro_batch"].value() == 3
    assert again.draft.gpus == ["L40S", "H200"]


def test_the_token_budget_is_one_epoch_of_a_fine_tuning_set_by_default(qtbot, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-8b", method="qlora", batch=4,
                        gpus=("RTX 4090",))
    budget = 10_000 * 4096
    assert wizard.draft.tokens == budget
    assert "41M tokens: one epoch of 10,000 samples × 4,096 tokens" in result.plans_title.text()
    assert "41M tokens: one epoch" in wizard.training_page.budget.text()
    hours = result.plans[0].hours(budget)
    assert hours < 24  # a fine-tune of an 8B model on one card: hours, not "96 days"
    assert result.plans_table.plan_items()[0].text(TIME) == duration(hours * 3600)


def test_an_8b_qlora_runs_on_one_4090_with_accumulation(qtbot, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-8b", method="qlora", batch=4,
                        gpus=("RTX 4090", "A100 80GB", "H100 SXM"))
    items = result.plans_table.plan_items()
    first = next(i for i in items if i.text(GPU) == "RTX 4090")
    s = first.row.plan.setup
    assert first.text(GPUS_) == "1" and first.parent().text(0).startswith(
        "Plans that keep the experiment")
    assert s.micro_batch <= 2 and s.micro_batch * s.grad_accum == 4
    assert first.row.plan.device_gib <= 0.85 * 24
    assert first.text(BATCH) == f"{s.micro_batch} × {s.grad_accum}"


def test_a_70b_full_run_as_asked_on_many_nodes_ranks_above_any_change(qtbot, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-70b", method="full", batch=1,
                        gpus=("H100 SXM",))
    table = result.plans_table
    titles = [table.topLevelItem(i).text(0) for i in range(table.topLevelItemCount())]
    assert titles[0].startswith("Plans that keep the experiment")
    assert titles[-1].startswith("If you can change the experiment")
    keeps = [table.topLevelItem(0).child(j) for j in range(table.topLevelItem(0).childCount())]
    as_asked = next(i for i in keeps if i.text(CHANGES) == "as asked")
    assert int(as_asked.text(GPUS_)) >= 16 and int(as_asked.text(NODES)) > 1
    for item in table.plan_items():
        layout = item.row.plan.setup.layout
        if layout.offload_optimizer or layout.offload_params:
            assert item.text(HOST_RAM).endswith(" GiB") and "CPU memory" in item.toolTip(HOST_RAM)
    assert all(int(as_asked.text(RANK)) < item.row.rank for item in table.plan_items()
               if item.row.plan.level > 0)


def test_plans_sort_by_column_within_their_sections_with_full_text_in_tooltips(qtbot, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-70b", method="full", batch=1,
                        gpus=("H100 SXM", "A100 80GB"))
    table = result.plans_table
    titles = lambda: [table.topLevelItem(i).text(0) for i in range(table.topLevelItemCount())]  # noqa: E731
    before = titles()
    for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
        table.header().setSortIndicator(GIB_COLUMN, order)  # what a header click does
        assert titles() == before  # sections stay in the order of change
        for i in range(table.topLevelItemCount()):
            section = table.topLevelItem(i)
            shown = [section.child(j).row.plan.device_gib for j in range(section.childCount())]
            assert shown == sorted(shown, reverse=order == Qt.SortOrder.DescendingOrder)
    for item in table.plan_items():
        plan_ = item.row.plan
        assert all(item.toolTip(c) for c in range(table.columnCount()))
        assert item.toolTip(LAYOUT).split("\n")[0] == plan_.layout
        assert all(change in item.toolTip(CHANGES) for change in plan_.changes)


def test_selecting_a_plan_redraws_the_chart_and_the_breakdown(qtbot, wizard):
    result = _to_result(qtbot, wizard, model="llama-3.1-70b", method="full", batch=1,
                        gpus=("H100 SXM",))
    item = next(i for i in result.plans_table.plan_items() if i.row.rank == 2)
    result.plans_table.setCurrentItem(item)  # what a click does
    chosen = result.plans[1]
    assert result.selected == 2 and result.bars[-1].plan is chosen
    assert result.chart.ticks[-1].split("\n")[2] == "plan 2"
    est = estimate(preset("llama-3.1-70b"), chosen.setup)
    drawn = result.chart.bar_data()
    assert sum(drawn[c][-1] for c in drawn) == pytest.approx(est.required / GIB)
    assert result.chart.selection.opts["x"][0] == len(result.bars) - 1
    figures = result.figures.text()
    assert "plan 2" in figures and f"{est.required / GIB:.2f}" in figures


def test_card_mode_answers_what_the_card_can_run(qtbot, wizard):
    page = wizard.model_page
    page.modes["card"].setChecked(True)
    _choose(page.card_combo, "RTX 4090")
    _choose(page.preset_combo, "llama-3.1-8b")
    page.preset_combo.activated.emit(page.preset_combo.currentIndex())
    _next(qtbot, wizard)
    training = wizard.training_page
    _choose(training.combos["method"], "qlora")
    training.spins["micro_batch"].setValue(4)
    training.spins["seq_len"].setValue(4096)
    _next(qtbot, wizard)
    result = wizard.result_page
    assert wizard.currentPage() is result  # the cards were named on the first page
    qtbot.waitUntil(lambda: not result.planning, timeout=20_000)
    answer = Sizer(preset("llama-3.1-8b")).fit_to_card(wizard.draft.setup(with_layout=False),
                                                      catalog()["RTX 4090"], 1)
    assert result.answer == answer and result.plans == [answer.best]
    assert result.headline.text().startswith("1 × RTX 4090 runs it with micro batch 4 → ")
    assert f"largest micro batch is {answer.best.max_micro_batch}" in result.headline.text()
    assert result.plans_table.topLevelItem(0).text(0) == "Runs on your 1 × RTX 4090 (1)"
    assert [b.verdict for b in result.bars] == ["short", "fits"]  # as asked, then the answer
    wizard.back()
    _choose(training.combos["method"], "full")
    _choose(training.combos["precision"], "mixed-bf16")
    _next(qtbot, wizard)
    qtbot.waitUntil(lambda: not result.planning, timeout=20_000)
    assert "cannot keep this experiment; it fits if you change to " in result.headline.text()


def test_the_wizard_fits_a_1280x800_screen(qtbot, history, wizard):
    limit = QSize(1280, 800 - 40)  # the title bar and a panel take the rest
    _to_result(qtbot, wizard, model="llama-3.1-70b", method="full", batch=1,
               gpus=("H100 SXM", "A100 80GB", "RTX 4090"))
    for page_id in wizard.pageIds():
        page = wizard.page(page_id)
        assert page.minimumSizeHint().height() < limit.height() - 150, page.title()
    assert wizard.width() <= limit.width() and wizard.height() <= limit.height()
    assert wizard.minimumSize().height() <= limit.height() - 150  # room to spare


def test_the_recorded_run_list_and_its_label_agree(qtbot, history, composed, settings):
    from desktop.views.sizing.wizard import SizingWizard

    w = SizingWizard(composed.sizing, settings)
    qtbot.addWidget(w)
    page = w.model_page
    qtbot.waitUntil(lambda: page.run_combo.count() == 4)
    assert page.run_combo.isEnabled() and page.radios["run"].text().endswith("(4 usable)")
    assert page.run_combo.placeholderText() == "Choose one of 4 recorded runs"
    page.radios["run"].setChecked(True)  # choosing the source picks the latest run
    assert page.run_combo.currentIndex() == 0 and w.draft.spec is not None


def test_no_recorded_run_says_so_and_cannot_be_chosen(qtbot, wizard):
    page = wizard.model_page
    qtbot.waitUntil(lambda: not page.run_combo.isEnabled()
                    and page.run_combo.placeholderText().startswith("No recorded run"))
    assert page.run_combo.count() == 0


def test_right_click_exports_the_plan_under_the_mouse(qtbot, wizard, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QFileDialog, QMenu

    from core.export import Target
    from desktop.views.sizing import export_menu

    result = _to_result(qtbot, wizard, model="llama-3.1-70b", method="full", batch=1,
                        gpus=("H100 SXM",))
    table = result.plans_table
    second = next(i for i in table.plan_items() if i.row.rank == 2)
    table.customContextMenuRequested.emit(table.visualItemRect(second).center())
    table.customContextMenuRequested.emit(table.visualItemRect(table.topLevelItem(0)).center())
    [shown] = table.findChildren(QMenu, options=Qt.FindChildOption.FindDirectChildrenOnly)
    [sub] = [a.menu() for a in shown.actions() if a.menu()]
    launch = next(a for a in sub.actions() if a.text().startswith(export_menu.TITLES["launch"]))
    target = tmp_path / "launch.sh"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    launch.trigger()
    shown.close()
    chosen, first = result.plans[1], result.plans[0]  # rank 2, not the section title's row
    assert Target.of(result.draft.spec, chosen).plan_hash in target.read_text()
    assert Target.of(result.draft.spec, first).plan_hash not in target.read_text()
    assert f"{chosen.n_gpus} x {chosen.gpu}" in target.read_text()
    assert chosen.layout.split(",")[0] in target.read_text()
