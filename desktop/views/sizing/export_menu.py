"""Export as…: a plan of the wizard's plans table written as a framework's own config.

:func:`attach` gives the plans table its right-click menu; :func:`menu` builds
the menu for one plan (formats that cannot express it are disabled, their
reason in the tooltip) and :func:`save` writes one export, so a test or
another view drives them without a click.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog, QMenu, QTreeView, QWidget

from core.export import FORMATS, Export, ExportError, Target, export
from core.memory import ModelSpec
from core.planner import Plan

TITLES = {"hf": "Hugging Face TrainingArguments (JSON)", "accelerate": "accelerate Config (YAML)",
          "deepspeed": "DeepSpeed Config (JSON)", "torchtune": "torchtune Overrides (YAML)",
          "axolotl": "axolotl Config (YAML)", "lightning": "Lightning Trainer (Python)",
          "launch": "Launch Lines (torchrun, accelerate)"}


def attach(table: QTreeView, plan_at: Callable[[QPoint], Plan | None],
           spec: Callable[[], ModelSpec | None], status: Callable[[str], None]) -> None:
    """Right-click on a plan of ``table`` (``plan_at`` says which) offers Export as…."""
    def open_menu(pos: QPoint) -> None:
        plan, model = plan_at(pos), spec()
        if plan is not None and model is not None:
            opened = menu(table, model, plan, status)
            opened.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            opened.popup(table.viewport().mapToGlobal(pos))

    table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    table.customContextMenuRequested.connect(open_menu)


def menu(parent: QWidget, spec: ModelSpec, plan: Plan, status: Callable[[str], None]) -> QMenu:
    """"Export as" with one action per format; each asks where to save."""
    top = QMenu(parent)
    sub = top.addMenu("Export as")
    target = Target.of(spec, plan)
    for fmt in FORMATS:
        action = sub.addAction(TITLES[fmt] + "…")
        try:
            done = export(target, fmt)
        except ExportError as err:
            action.setEnabled(False)
            action.setToolTip(str(err))
            continue
        action.triggered.connect(lambda _=False, d=done: _ask_and_save(parent, d, status))
    sub.setToolTipsVisible(True)
    return top


def save(exported: Export, path: Path) -> str:
    """Write ``exported`` to ``path``; the status line to show (what it leaves to the user)."""
    path.write_text(exported.text, encoding="utf-8")
    notes = f" Note: {'; '.join(exported.notes)}." if exported.notes else ""
    return f"Saved plan {exported.plan_hash} as {exported.format} to {path}.{notes}"


def _ask_and_save(parent: QWidget, exported: Export, status: Callable[[str], None]) -> None:
    name, _ = QFileDialog.getSaveFileName(parent, f"Export the plan as {TITLES[exported.format]}",
                                          str(Path.home() / exported.filename))
    if not name:
        return
    try:
        status(save(exported, Path(name)))
    except OSError as err:
        status(f"Could not write {name}: {err.strerror or err}")
