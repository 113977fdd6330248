"""Export as…: the plans table's right-click menu, driven directly with real plans."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog, QMenu, QTreeWidget, QTreeWidgetItem

from core.gpus import find
from core.memory import Layout
from core.models import preset
from core.sizing import Sizer, planned_setup
from desktop.views.sizing import export_menu


@pytest.fixture
def lora_plan():
    spec = preset("llama-3.1-8b")
    setup = planned_setup("lora", "hf", Layout(), micro_batch=2, seq_len=2048)
    return spec, Sizer(spec).fit_to_card(setup, find("rtx-4090"), 1).best


def _actions(menu: QMenu) -> dict:
    [sub] = [a.menu() for a in menu.actions() if a.menu()]
    return {a.text().removesuffix("…"): a for a in sub.actions()}


def test_formats_that_cannot_express_the_plan_are_disabled_with_the_reason(qtbot, lora_plan):
    spec, plan = lora_plan
    menu = export_menu.menu(None, spec, plan, lambda _: None)
    actions = _actions(menu)
    assert list(actions) == [export_menu.TITLES[f] for f in export_menu.FORMATS]
    hf, axolotl = actions[export_menu.TITLES["hf"]], actions[export_menu.TITLES["axolotl"]]
    assert hf.isEnabled() and not axolotl.isEnabled()
    assert "plan with --framework axolotl" in axolotl.toolTip()


def test_choosing_a_format_saves_the_config_where_the_user_says(qtbot, lora_plan, tmp_path,
                                                                 monkeypatch):
    spec, plan = lora_plan
    target = tmp_path / "args.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    said: list[str] = []
    menu = export_menu.menu(None, spec, plan, said.append)  # kept: a parentless menu dies with
    _actions(menu)[export_menu.TITLES["hf"]].trigger()       # its last Python reference
    args = json.loads(target.read_text())
    assert args["per_device_train_batch_size"] == plan.setup.micro_batch
    assert said and said[0].startswith("Saved plan ") and str(target) in said[0]
    assert args["run_name"].split("-", 1)[1].split("@")[0] in said[0]  # the plan's hash


def test_the_table_offers_the_menu_for_the_row_under_the_mouse(qtbot, lora_plan, monkeypatch,
                                                                tmp_path):
    spec, plan = lora_plan
    table = QTreeWidget()
    qtbot.addWidget(table)
    table.addTopLevelItems([QTreeWidgetItem(["1"]), QTreeWidgetItem(["2"])])
    table.show()
    other = replace(plan, gpu="H100 SXM")
    plans = [plan, other]
    export_menu.attach(table, lambda pos: plans[table.indexOfTopLevelItem(table.itemAt(pos))]
                       if table.itemAt(pos) else None, lambda: spec, lambda _: None)
    assert table.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu
    second = table.visualItemRect(table.topLevelItem(1)).center()
    table.customContextMenuRequested.emit(second)
    table.customContextMenuRequested.emit(QPoint(5, 500))  # below the rows: no menu
    shown = table.findChildren(QMenu, options=Qt.FindChildOption.FindDirectChildrenOnly)
    assert len(shown) == 1 and shown[0].isVisible()
    target = tmp_path / "launch.sh"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    _actions(shown[0])[export_menu.TITLES["launch"]].trigger()
    shown[0].close()  # a click closes it; trigger() does not
    assert "x H100 SXM" in target.read_text()  # the second row's plan
