"""Wizard page 3: the GPUs you have or are considering, how many, and how the run spreads.

Or "recommend": Headroom searches the whole catalog for layouts that fit.
The layout is checked by the memory model's rules (TP must divide the heads,
GPUs must be a multiple of TP × PP...) and a problem is said on the page.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.gpus import GPU, catalog
from desktop.presenters.sizing_form import SHARDING, Draft, hardware_problem
from desktop.views.sizing.page import FIELD_WIDTH, DraftPage, hint_label, hints_panel

HEADERS = ("GPU", "Memory GiB", "Memory TB/s", "BF16 TFLOP/s", "FP8 TFLOP/s", "GPU-to-GPU link")
# A first-time user compares a consumer card with two data-centre generations.
DEFAULT_GPUS = ("RTX 4090", "A100 80GB", "H100 SXM")
NAME_ROLE = Qt.ItemDataRole.UserRole
LINKS = {"nvlink": "NVLink", "pcie": "PCIe", "xgmi": "Infinity Fabric", "roce": "RoCE"}


class HardwarePage(DraftPage):
    def __init__(self, draft: Draft) -> None:
        super().__init__(draft, "Hardware", "Which GPUs do you have, or are you considering?")
        self.table = _gpu_table()
        self.recommend = QCheckBox("Recommend GPUs and a layout for me\n(search the whole catalog)")
        self.spins = {"per_node": _spin(1, 72), "nodes": _spin(1, 512), "tp": _spin(1, 64),
                      "pp": _spin(1, 128)}
        self.budget = _spin(0, 4096)
        self.budget.setSpecialValueText("as needed")  # 0: as many GPUs as the job needs
        self.margin = QSpinBox(minimum=0, maximum=50, suffix=" %")
        self.sharding = QComboBox()
        for value, text in SHARDING.items():
            self.sharding.addItem(text, value)
        self.total = QLabel()
        self._layout()
        self.table.itemChanged.connect(self._changed)
        self.recommend.toggled.connect(self._changed)
        self.sharding.currentIndexChanged.connect(self._changed)
        self.margin.valueChanged.connect(self._changed)
        self.budget.valueChanged.connect(self._changed)
        for spin in self.spins.values():
            spin.valueChanged.connect(self._changed)

    def _layout(self) -> None:
        form = QFormLayout()
        count = QHBoxLayout()
        count.addWidget(self.spins["per_node"])
        count.addWidget(QLabel("per node ×"))
        count.addWidget(self.spins["nodes"])
        count.addWidget(QLabel("nodes"))
        count.addStretch(1)
        form.addRow("GPUs:", count)
        form.addRow("", self.total)
        form.addRow("Sharding:", self.sharding)
        form.addRow("Tensor parallel (TP):", self.spins["tp"])
        form.addRow("Pipeline parallel (PP):", self.spins["pp"])
        form.addRow("Keep free (margin):", self.margin)
        form.addRow("GPU budget for plans:", self.budget)
        self.sharding.setFixedWidth(FIELD_WIDTH - 80)
        self.recommend.setStyleSheet("font-weight: 600;")
        side = QVBoxLayout()
        side.addWidget(self.recommend)
        side.addLayout(form)
        side.addWidget(self.problem)
        side.addWidget(hints_panel(hint_label(
            "Data parallelism needs the whole model on every GPU; ZeRO shards the optimizer "
            "state, then the gradients, then the weights.<br><br>TP splits every layer and talks "
            "at every layer: keep it inside an NVLink node; over PCIe it is often slower than "
            "one GPU. PP splits the layers into stages and idles in its bubbles.<br><br>"
            "Keep 15–20 % of the card free: allocator fragmentation and spikes need it.")), 1)
        row = QHBoxLayout(self.scrolling_body())
        row.addWidget(self.table, 1)
        row.addSpacing(8)
        side_widget = QWidget()
        side_widget.setLayout(side)
        side_widget.setFixedWidth(FIELD_WIDTH + 150)
        row.addWidget(side_widget)

    def initializePage(self) -> None:
        d = self.draft
        chosen = set(d.gpus or [g for g in DEFAULT_GPUS if g in catalog()])
        self.table.blockSignals(True)
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            checked = item.data(0, NAME_ROLE) in chosen
            item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.table.blockSignals(False)
        for name, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(d, name))
            spin.blockSignals(False)
        self.sharding.blockSignals(True)
        self.sharding.setCurrentIndex(max(self.sharding.findData(d.sharding), 0))
        self.sharding.blockSignals(False)
        for spin, value in ((self.margin, round(d.margin * 100)), (self.budget, d.max_gpus or 0)):
            spin.blockSignals(True)
            spin.setValue(value)
            spin.blockSignals(False)
        self.recommend.setChecked(d.recommend)
        self._changed()

    def problem_text(self) -> str:
        return hardware_problem(self.draft)

    def tick(self, names: list[str]) -> None:
        """Tick exactly these GPUs (by catalog name)."""
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            on = item.data(0, NAME_ROLE) in names
            item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def _changed(self, *_args) -> None:
        d = self.draft
        d.gpus = [self.table.topLevelItem(i).data(0, NAME_ROLE)
                  for i in range(self.table.topLevelItemCount())
                  if self.table.topLevelItem(i).checkState(0) == Qt.CheckState.Checked]
        for name, spin in self.spins.items():
            setattr(d, name, spin.value())
        d.sharding = self.sharding.currentData()
        d.recommend = self.recommend.isChecked()
        d.margin = self.margin.value() / 100
        d.max_gpus = self.budget.value() or None
        self.table.setEnabled(not d.recommend)
        self.total.setText(f"= {d.n_gpus} GPU{'s' if d.n_gpus != 1 else ''}")
        self.refresh()


def _gpu_table() -> QTreeWidget:
    table = QTreeWidget(rootIsDecorated=False, uniformRowHeights=True, alternatingRowColors=True)
    table.setHeaderLabels(list(HEADERS))
    for gpu in catalog().values():
        table.addTopLevelItem(_gpu_item(gpu))
    table.setColumnWidth(0, 120)
    for column in range(1, len(HEADERS) - 1):
        table.setColumnWidth(column, 96)
    return table


def _gpu_item(gpu: GPU) -> QTreeWidgetItem:
    link = f"{LINKS.get(gpu.link, gpu.link)} {gpu.link_gbs:g} GB/s"
    fp8 = f"{gpu.fp8_tflops:g}" if gpu.fp8_tflops else "—"
    item = QTreeWidgetItem([gpu.name, f"{gpu.memory_gib:g}", f"{gpu.bandwidth_tbs:g}",
                            f"{gpu.bf16_tflops:g}", fp8, link])
    item.setData(0, NAME_ROLE, gpu.name)
    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
    item.setToolTip(0, gpu.source + (" (figures from announcement material)" if gpu.approx
                                     else ""))
    for column in range(1, len(HEADERS) - 1):
        item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _spin(low: int, high: int) -> QSpinBox:
    return QSpinBox(minimum=low, maximum=high)
