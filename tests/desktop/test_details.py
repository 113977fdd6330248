from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from desktop.views.compare_view import CompareView
from desktop.views.details_panel import DetailsPanel
from desktop.views.shape_editor import NAME_ROLE
from tests.desktop.helpers import ingest_and_wait

RUN = "Dheena731__tinyLlama-finetune"  # a LoRA run: adapter_config.json states rank and targets


@pytest.fixture
def run_id(qtbot, services, corpus):
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / RUN])
    return services.store.find_run(RUN).id


def _value_item(panel: DetailsPanel, name: str):
    model = panel.shape.model_
    for g in range(model.rowCount()):
        group = model.item(g, 0)
        for r in range(group.rowCount()):
            item = group.child(r, 1)
            if item.data(NAME_ROLE) == name:
                return item, group.child(r, 2)
    raise KeyError(name)


def test_details_show_shape_sources_config_metrics_and_files(qtbot, details, services, run_id):
    services.select([run_id])
    assert details.run is not None and details.run.id == run_id
    assert RUN in details.title.text() and "hf_trainer" in details.meta.text()
    rank, source = _value_item(details, "lora_rank")
    assert (rank.text(), source.text()) == ("8", "adapter_config.json")
    metrics = [details.stats_model.item(r, 0).text() for r in range(details.stats_model.rowCount())]
    assert "loss" in metrics and "learning rate" in metrics
    own = details.files.model.item(0, 0)
    files = [own.child(r, 0).text() for r in range(own.rowCount())]
    assert any(f.endswith("trainer_state.json") for f in files)


def test_a_run_merged_away_while_shown_empties_the_details(qtbot, details, services, run_id):
    """An ingest may merge the shown run into another at any moment: the tab reads the run in
    one transaction and shows nothing once it is gone, never a half-filled page."""
    services.select([run_id])
    assert details.stack.currentIndex() == 1
    services.store.delete_runs([run_id])  # what joining it to another run does to its id
    assert services.details(run_id) is None
    services.sig_runs_changed.emit()
    assert details.run is None and details.stack.currentIndex() == 0


def test_curves_of_a_run_merged_away_while_read_are_left_out(services, run_id, corpus,
                                                            qtbot, monkeypatch):
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / "One-eyed-warrior__lora-finetuning"])
    other = next(r.id for r in services.store.runs() if r.id != run_id)
    read = services.store.series

    def merged_meanwhile(rid, name):
        if rid == run_id:
            services.store.delete_runs([run_id])
        return read(rid, name)

    monkeypatch.setattr(services.store, "series", merged_meanwhile)
    assert [p.run_id for p in services.read_plot_data([run_id, other])] == [other]


def test_editing_a_shape_field_stores_it_as_the_users(qtbot, details, services, run_id):
    services.select([run_id])
    item, _ = _value_item(details, "seq_len")
    item.setText("2,048")
    qtbot.waitUntil(lambda: _value_item(details, "seq_len")[1].text() == "you")
    run = services.store.run(run_id)
    assert run.shape.seq_len == 2048 and run.shape.sources["seq_len"] == "user"


def test_a_bad_shape_value_is_refused_with_a_message(qtbot, details, services, run_id):
    services.select([run_id])
    messages: list[str] = []
    services.sig_message.connect(messages.append)
    item, _ = _value_item(details, "n_layers")
    item.setText("twenty")
    qtbot.waitUntil(lambda: bool(messages))
    assert services.store.run(run_id).shape.n_layers is None
    assert messages == ["Not saved: layers: a whole number, not 'twenty'"]
    assert _value_item(details, "n_layers")[0].text() == ""


def test_config_search_keeps_matching_rows_and_their_parents(qtbot, details, services, run_id):
    services.select([run_id])
    tree = details.config
    total = tree.proxy.rowCount()
    tree.search.setText("eval_steps")
    assert 1 <= tree.proxy.rowCount() < total
    keys = [tree.proxy.index(r, 0).data() for r in range(tree.proxy.rowCount())]
    assert "eval_steps" in keys
    tree.search.clear()
    assert tree.proxy.rowCount() == total


def test_notes_and_tags_save_from_the_details(qtbot, details, services, run_id):
    services.select([run_id])
    details.notes.setPlainText("LoRA r=8 baseline")
    details.tags.setText("lora, baseline")
    details._save_notes()  # written in the pool, one edit after the other
    qtbot.waitUntil(lambda: services.store.run(run_id).tags == ["baseline", "lora"])
    assert services.store.run(run_id).notes == "LoRA r=8 baseline"


def test_compare_shows_only_what_differs(qtbot, services, composed, corpus):
    other = "tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs"
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / RUN, corpus / "hf_trainer" / other])
    view = CompareView(services, composed.compare)
    qtbot.addWidget(view)
    view.show()
    services.select([r.id for r in services.store.runs()])
    sections = [view.model.item(r, 0) for r in range(view.model.rowCount())]
    shape = next(s for s in sections if s.text() == "Shape")
    rows = {shape.child(r, 0).text(): (shape.child(r, 1).text(), shape.child(r, 2).text())
            for r in range(shape.rowCount())}
    assert rows["lora rank"] in {("8", "16"), ("16", "8")}
    assert "method" not in rows  # both are LoRA: the same setting is hidden
    view.only_differences.setChecked(False)
    shape = next(view.model.item(r, 0) for r in range(view.model.rowCount())
                 if view.model.item(r, 0).text() == "Shape")
    assert "method" in {shape.child(r, 0).text() for r in range(shape.rowCount())}
    assert "settings differ" in view.summary.text()
    heads = [view.model.headerData(i, Qt.Orientation.Horizontal, Qt.ItemDataRole.ForegroundRole)
             for i in (1, 2)]
    colours = {r.id: r.colour for r in services.store.runs()}
    shown = [colours[i] for i in services.selected]
    assert [h.color().name() for h in heads] == shown  # each run's own colour, as in the plots


def test_a_run_launched_from_a_plan_shows_its_prediction_beside_its_peak(qtbot, details, services,
                                                                          tmp_path):
    import json

    path = tmp_path / "planned.jsonl"
    header = {"headroom": 1, "run": {"name": "planned", "shape": {},
                                     "config": {"plan": {"hash": "0123456789ab",
                                                         "device_gib": 17.25}}}}
    rows = [{"step": s, "loss": 1.0, "mem_peak_gib": 15.0 + s / 10} for s in range(1, 11)]
    path.write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    ingest_and_wait(qtbot, services, [path])
    services.select([services.store.find_run("planned").id])
    text = details.meta.text()
    assert "launched from plan <code>0123456789ab</code>" in text
    assert "predicted 17.2 GiB per GPU" in text and "recorded peak 16.0 GiB" in text


def test_compare_leaves_out_a_run_merged_away_while_read(qtbot, services, composed, corpus,
                                                         monkeypatch):
    """The tab lists the runs, then reads their configs: a run an ingest merged away in
    between is left out of the columns, not an error."""
    names = [RUN, "tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs", "One-eyed-warrior__lora-finetuning"]
    ingest_and_wait(qtbot, services, [corpus / "hf_trainer" / n for n in names])
    view = CompareView(services, composed.compare)
    qtbot.addWidget(view)
    view.show()
    listed, gone = services.runs, services.store.find_run(RUN).id

    def merged_meanwhile(run_ids):
        runs = listed(run_ids)
        services.store.delete_runs([gone])
        return runs

    monkeypatch.setattr(services, "runs", merged_meanwhile)
    services.select([r.id for r in services.store.runs()])
    assert view.model.columnCount() == 3  # the setting's name, then the two runs left
    heads = {view.model.headerData(i, Qt.Orientation.Horizontal) for i in (1, 2)}
    assert not any(RUN in h for h in heads) and "2 runs" in view.summary.text()


def test_no_configs_are_read_before_the_database_opens(qtbot):
    from desktop.services import AppServices

    assert AppServices().configs([1, 2]) == {}  # the Compare tab then asks for two runs
