from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from PySide6.QtCore import Qt

from core.shape import RunShape
from desktop.models.run_table_model import RUN_ID_ROLE, RunFilterProxy, RunTableModel
from desktop.presenters.run_columns import COLUMN_INDEX, COLUMNS
from tracker.ingest import ingest
from tracker.model import RunSummary, SeriesInfo


@pytest.fixture
def corpus_runs(store, corpus):
    """Real summaries: every HF Trainer run folder of the corpus, ingested."""
    report = ingest(store, sorted((corpus / "hf_trainer").iterdir()))
    assert report.ok
    return store.runs()


def _models(runs):
    model = RunTableModel()
    model.set_runs(runs)
    proxy = RunFilterProxy()
    proxy.setSourceModel(model)
    return model, proxy


def test_model_passes_the_qt_model_tester_before_and_after_a_refresh(qtmodeltester, corpus_runs):
    model, proxy = _models(corpus_runs)
    qtmodeltester.check(model)
    qtmodeltester.check(proxy)
    model.set_runs(corpus_runs[:3])
    qtmodeltester.check(model)
    assert model.rowCount() == 3 and model.columnCount() == len(COLUMNS)


def test_every_column_sorts_both_ways_with_missing_values_last(corpus_runs):
    model, proxy = _models(corpus_runs)
    for column in range(len(COLUMNS)):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            proxy.sort(column, order)
            keys = [model.row(proxy.mapToSource(proxy.index(r, 0)).row()).keys[column]
                    for r in range(proxy.rowCount())]
            present = [k for k in keys if k is not None]
            assert keys == present + [None] * (len(keys) - len(present)), COLUMNS[column].key
            norm = [k.lower() if isinstance(k, str) else k for k in present]
            assert norm == sorted(norm, reverse=order == Qt.SortOrder.DescendingOrder)


def test_sort_keeps_the_selection_on_the_same_runs(qtbot, corpus_runs):
    from PySide6.QtCore import QItemSelectionModel
    from PySide6.QtWidgets import QTableView

    model, proxy = _models(corpus_runs)
    view = QTableView()
    qtbot.addWidget(view)
    view.setModel(proxy)
    chosen = proxy.index(2, 0)
    run_id = chosen.data(RUN_ID_ROLE)
    view.selectionModel().select(chosen, QItemSelectionModel.SelectionFlag.Select
                                 | QItemSelectionModel.SelectionFlag.Rows)
    proxy.sort(COLUMN_INDEX["steps"], Qt.SortOrder.DescendingOrder)
    assert [i.data(RUN_ID_ROLE) for i in view.selectionModel().selectedRows()] == [run_id]


def test_filters_by_words_tag_and_format(store, corpus_runs):
    whisper = next(r for r in corpus_runs if "whisper" in r.name)
    store.set_tags(whisper.id, ["asr", "baseline"])
    model, proxy = _models(store.runs())

    def shown():
        return sorted(proxy.index(r, 0).data() for r in range(proxy.rowCount()))

    proxy.set_filters("WHISPER japanese", None, None)
    assert shown() == [whisper.name]
    proxy.set_filters("", "asr", None)
    assert shown() == [whisper.name]
    proxy.set_filters("", None, "hf_trainer")
    assert proxy.rowCount() == len(corpus_runs)
    proxy.set_filters("lora", None, None)  # method and adapter paths count as words
    assert whisper.name not in shown() and len(shown()) >= 2
    proxy.set_filters("", None, "tensorboard")
    assert proxy.rowCount() == 0


def _synthetic(n: int) -> list[RunSummary]:
    """Many runs with every column filled or missing, as a big database holds them."""
    start = datetime(2025, 1, 1)
    runs = []
    for i in range(n):
        series = {}
        if i % 3:
            series["loss"] = SeriesInfo(100, 1, 100 + i, 1.0 + i % 7, 9.0,
                                        1.5 + (i * 37 % 101) / 100, None, id=i, name="loss",
                                        original_name="loss")
        shape = RunShape(model=f"org/model-{i % 11}", n_gpus=(i % 8) or None, method="lora")
        runs.append(RunSummary(id=i + 1, name=f"run-{i:05d}",
                               format=("hf_trainer", "lightning")[i % 2], source_path=f"/runs/{i}",
                               started_at=start + timedelta(minutes=i),
                               ingested_at=start, status="finished", notes="", shape=shape,
                               tags=["sweep"] if i % 10 == 0 else [], series=series))
    return runs


def test_thousands_of_runs_sort_and_filter_correctly(qtmodeltester):
    runs = _synthetic(5000)
    model, proxy = _models(runs)
    proxy.sort(COLUMN_INDEX["last_loss"], Qt.SortOrder.AscendingOrder)
    first = model.row(proxy.mapToSource(proxy.index(0, 0)).row()).run
    assert first.stat("loss", "last") == min(r.stat("loss", "last") for r in runs if r.series)
    last = model.row(proxy.mapToSource(proxy.index(proxy.rowCount() - 1, 0)).row()).run
    assert not last.series  # runs without a loss go last
    proxy.set_filters("", "sweep", "hf_trainer")
    assert proxy.rowCount() == sum(1 for i in range(5000) if i % 10 == 0 and i % 2 == 0)
    assert model.row_of(4242) is not None
