"""The runs panel's filter box as a query editor: filtering, errors, completion, saved filters."""

from __future__ import annotations

import pytest

from desktop.models.run_table_model import RUN_ID_ROLE
from desktop.presenters import query_text
from tests.desktop.helpers import ingest_and_wait


@pytest.mark.parametrize(("text", "is_query"), [
    ("llama", False), ("lora 8b", False), ("sample-lr5e-3", False), ("compile", False),
    ('method == "lora"', True), ("peak_gib>40", True), ('model ~ "x"', True),
    ('"a" in tags', True), ("not crashed", True), ('"a == b"', False),
])
def test_words_or_a_query(text, is_query):
    assert query_text.is_query(text) is is_query


def test_the_word_under_the_cursor_is_completed():
    text = 'method == "lora" and peak_g'
    assert query_text.word_at(text, len(text)) == (21, "peak_g")
    assert query_text.complete(text, len(text), "peak_gib") == (text + "ib", len(text) + 2)
    assert query_text.word_at('name ~ "pea', 11) == (11, "")  # inside a string: a value
    middle = "seq_l > 1 and x"
    assert query_text.complete(middle, 5, "seq_len") == ("seq_len > 1 and x", 7)


@pytest.fixture
def panel(qtbot, services, settings):
    from desktop.views.runs_panel import RunsPanel

    panel = RunsPanel(services, settings)
    qtbot.addWidget(panel)
    assert ingest_and_wait(qtbot, services, services.sample_paths()).ok
    panel.reload()
    qtbot.waitUntil(lambda: panel.model.rowCount() == 5, timeout=10_000)
    return panel


def _shown(panel) -> set[str]:
    proxy = panel.proxy
    return {panel.model.run(panel.model.row_of(proxy.index(i, 0).data(RUN_ID_ROLE))).name
            for i in range(proxy.rowCount())}


def test_a_query_filters_the_table_as_the_command_line_would(panel, services):
    from tracker import query

    text = 'peak_gib > 20 or (format == "hf_trainer" and final_loss < 0.5)'
    panel.filter_edit.setText(text)
    assert _shown(panel) == {"synthetic-llama3-8b-fsdp-8xh100", "hf-gpt2-tiny-lr5e-3"}
    ids = query.matching_ids(services.store, query.compile(text))
    assert {r.name for r in services.runs(ids)} == _shown(panel)
    assert panel.query.error_label.isHidden()
    panel.filter_edit.setText("llama")  # words again
    assert len(_shown(panel)) == 2


def test_a_query_over_the_config_loads_it_and_filters(qtbot, panel):
    panel.filter_edit.setText("config.learning_rate > 0 or config.lr > 0")
    qtbot.waitUntil(lambda: _shown(panel) == {"synthetic-llama3-8b-qlora-rtx4090",
                                              "lightning-tiny-lm"}, timeout=10_000)


def test_a_mistake_is_shown_at_its_column_and_filters_nothing(panel):
    panel.filter_edit.setText("peak_gib > and method")
    label = panel.query.error_label
    assert not label.isHidden()
    assert label.text().startswith("column 12: ")
    assert label.text().endswith("·  peak_gib > ▸and method")
    assert len(_shown(panel)) == 5
    panel.filter_edit.setText("peak_gib > 1")
    assert label.isHidden() and panel.filter_edit.styleSheet() == ""


def test_field_names_complete_from_the_runs_metrics(panel):
    names = panel.query.names.stringList()
    assert "peak_gib" in names and "tokens_per_s.last" in names and "grad_norm.max" in names
    panel.filter_edit.setText("grad_n")
    panel.filter_edit.setCursorPosition(6)
    panel.query._offer("grad_n")
    assert panel.query.completer.completionCount() == 3
    panel.query._insert("grad_norm.max")
    assert panel.filter_edit.text() == "grad_norm.max"


def test_saved_filters_are_kept_by_name(panel, settings):
    settings.save_filter("big / peaks", "peak_gib > 20")
    panel.query._fill_saved()
    actions = {a.text(): a for a in panel.query.saved_menu.actions()}
    actions["big / peaks"].trigger()
    assert panel.filter_edit.text() == "peak_gib > 20"
    assert _shown(panel) == {"synthetic-llama3-8b-fsdp-8xh100"}
    settings.save_filter("big / peaks", None)
    assert settings.saved_filters == {}
