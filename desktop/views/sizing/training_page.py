"""Wizard page 2: the goal, the training setup and its data, with the seed article's rules.

Every change is written to the draft and checked by the memory model's own
rules at once; a contradiction (QLoRA on an FP32 base...) is said on the page
and Next waits. The static memory of the choices is shown as they change.
The data sets the token budget plans are timed and priced for: one epoch of
a fine-tuning set by default, or a pretraining budget (20 tokens per
parameter unless the user says otherwise).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.models import ModelError, parse_count
from desktop.presenters.formatting import compact
from desktop.presenters.sizing_form import (
    ATTENTION,
    DATA,
    LORA_TARGETS,
    METHODS,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE,
    Draft,
    hints,
    static_line,
    training_problem,
)
from desktop.views.sizing.page import FIELD_WIDTH, DraftPage, hint_label, hints_panel

CHOICES = {"method": METHODS, "precision": PRECISIONS, "optimizer": OPTIMIZERS,
           "lora_targets": LORA_TARGETS, "recompute": RECOMPUTE, "attention": ATTENTION,
           "data": DATA}
NUMBERS = {"lora_rank": (1, 4096), "micro_batch": (1, 4096), "grad_accum": (1, 4096),
           "seq_len": (16, 1 << 21), "samples": (1, 2_000_000_000), "sample_len": (0, 1 << 21),
           "epochs": (1, 1000)}
DATA_ROWS = {"finetune": "Samples × tokens × epochs:", "inference": "Requests × tokens each:"}


class TrainingPage(DraftPage):
    def __init__(self, draft: Draft) -> None:
        super().__init__(draft, "Training", "What will the run do, and how?")
        self.combos = {name: _combo(items) for name, items in CHOICES.items()}
        self.spins = {name: _spin(*bounds) for name, bounds in NUMBERS.items()}
        self.spins["seq_len"].setSingleStep(512)
        self.spins["sample_len"].setSpecialValueText("seq. length")
        self.spins["epochs"].setFixedWidth(64)
        self.pretrain = QLineEdit(maximumWidth=120)
        self.data_label = QLabel()
        self.epochs_times = QLabel("×")
        self.budget = hint_label()
        self._tokens_error = ""
        self.static = hint_label()
        self.static.setStyleSheet("color: #1f2933; font-weight: 600;")
        self.hints = hint_label()
        self._layout()
        for name, combo in self.combos.items():
            combo.currentIndexChanged.connect(lambda _i, n=name: self._changed(n))
        for name, spin in self.spins.items():
            spin.valueChanged.connect(lambda _v, n=name: self._changed(n))
        self.pretrain.editingFinished.connect(self._on_pretrain)

    def _layout(self) -> None:
        self.form = form = QFormLayout()
        form.addRow("Goal:", self.combos["method"])
        form.addRow("Precision:", self.combos["precision"])
        form.addRow("Optimizer:", self.combos["optimizer"])
        form.addRow("LoRA rank and targets:",
                    _row(self.spins["lora_rank"], self.combos["lora_targets"]))
        form.addRow("Micro batch per GPU:", self.spins["micro_batch"])
        form.addRow("Gradient accumulation:", self.spins["grad_accum"])
        form.addRow("Sequence length:", self.spins["seq_len"])
        form.addRow("Recompute (checkpointing):", self.combos["recompute"])
        form.addRow("Attention:", self.combos["attention"])
        form.addRow("Training data:", self.combos["data"])
        form.addRow(self.data_label, _row(self.spins["samples"], QLabel("×"),
                                          self.spins["sample_len"], self.epochs_times,
                                          self.spins["epochs"]))
        form.addRow("Pretraining tokens:", self.pretrain)
        form.addRow("", self.budget)
        for combo in self.combos.values():
            combo.setFixedWidth(FIELD_WIDTH)
        self.combos["lora_targets"].setFixedWidth(FIELD_WIDTH - 126)  # beside the rank
        self.problem.setFixedWidth(FIELD_WIDTH + 180)
        left = QVBoxLayout()
        left.addLayout(form)
        left.addWidget(self.problem)
        left.addStretch(1)
        row = QHBoxLayout(self.scrolling_body())
        row.addLayout(left)
        row.addSpacing(12)
        row.addWidget(hints_panel(self.static, self.hints), 1)

    def initializePage(self) -> None:
        """Show the draft as it is now (a recorded run may have seeded it)."""
        self._show_draft()
        self.refresh()

    def problem_text(self) -> str:
        return training_problem(self.draft) or self._tokens_error

    def refresh(self) -> None:
        super().refresh()
        d = self.draft
        adapters = d.method in ("lora", "qlora")
        self.spins["lora_rank"].setEnabled(adapters)
        self.combos["lora_targets"].setEnabled(adapters)
        self.combos["data"].setEnabled(d.method == "full")  # only a full run pretrains
        rows = self.form.rowCount()
        self.form.setRowVisible(rows - 3, not d.pretraining)
        self.form.setRowVisible(rows - 2, d.pretraining)
        self.data_label.setText(DATA_ROWS["inference" if d.method == "inference" else "finetune"])
        self.epochs_times.setVisible(d.method != "inference")
        self.spins["epochs"].setVisible(d.method != "inference")
        self.pretrain.setPlaceholderText(f"{compact(d.chinchilla_tokens)}: 20 per parameter")
        self.budget.setText(f"Plans are timed and priced for {d.data_line()}")
        self.static.setText(static_line(self.draft))
        self.hints.setText("<br>".join(f"• {h}" for h in hints(self.draft)))

    def _changed(self, name: str) -> None:
        if name in self.combos:
            value = self.combos[name].currentData()
            if name == "method":
                self.draft.set_method(value)  # the goal's usual precision and optimizer
                self._show_draft()
            else:
                setattr(self.draft, name, value)
        else:
            setattr(self.draft, name, self.spins[name].value())
        self.refresh()

    def _show_draft(self) -> None:
        for name, combo in self.combos.items():
            combo.blockSignals(True)
            combo.setCurrentIndex(max(combo.findData(getattr(self.draft, name)), 0))
            combo.blockSignals(False)
        for name, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(self.draft, name))
            spin.blockSignals(False)
        tokens = self.draft.pretrain_tokens
        self.pretrain.setText(compact(tokens) if tokens else "")

    def _on_pretrain(self) -> None:
        entered = self.pretrain.text().strip()
        try:
            self.draft.pretrain_tokens = parse_count(entered) if entered else 0.0
            self._tokens_error = ""
        except ModelError:
            self._tokens_error = f"Pretraining tokens: {entered!r} is not a count (try 300B)"
        self.refresh()


def _combo(items: dict[str, str]) -> QComboBox:
    combo = QComboBox()
    for value, text in items.items():
        combo.addItem(text, value)
    return combo


def _spin(low: int, high: int) -> QSpinBox:
    spin = QSpinBox(minimum=low, maximum=high)
    spin.setGroupSeparatorShown(True)
    spin.setFixedWidth(120)
    return spin


def _row(*widgets: QWidget) -> QWidget:
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        layout.addWidget(widget)
    layout.addStretch(1)
    return row
