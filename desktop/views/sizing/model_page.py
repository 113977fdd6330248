"""Wizard page 1: the question, and the model from a preset, a config.json, a run or a count.

The question is either "how much memory will my run need, and on which
GPUs?" or "what can my card run?" (the cards named here; the wizard then
skips the hardware page). A config.json is counted on torch's meta device in
the pool (importing transformers takes seconds); Next waits for the count.
Whatever the source, the page shows what it resolved to, and which preset a
bare count borrowed. The last model chosen (not a recorded run: those belong
to the database) comes back at the next opening.
"""

from __future__ import annotations

import html
from itertools import groupby
from pathlib import Path

from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
)

from core.gpus import catalog
from core.memory import ModelSpec
from core.models import ModelError, from_params, parse_count, preset, presets
from desktop.presenters.sizing_form import (
    DEFAULT_PRESET,
    MODES,
    SOURCES,
    Draft,
    model_problem,
    parameter_parts,
)
from desktop.presenters.sizing_report import hardware_line, setup_line
from desktop.sizing_services import RunInputs, SizingServices
from desktop.views.sizing.page import FIELD_WIDTH, DraftPage, hint_label
from desktop.widgets.drop import local_paths

NO_RUNS = "No recorded run states enough of its shape yet"
SOURCES_SAID = {"run shape": "Architecture as the run's log states it"}


class ModelPage(DraftPage):
    def __init__(self, draft: Draft, sizing: SizingServices) -> None:
        super().__init__(draft, "Model", "What you want to know, and which model will "
                                         "the run train or serve")
        self._sizing = sizing
        self._error = ""
        self._counting = 0  # generation of the config being counted (0: none)
        self._generation = 0
        self._runs: list[RunInputs] = []
        self.modes = {key: QRadioButton(text) for key, text in MODES.items()}
        self.mode_group = QButtonGroup(self)
        for radio in self.modes.values():
            self.mode_group.addButton(radio)
        self.card_combo = QComboBox()
        for name in catalog():
            self.card_combo.addItem(name, name)
        self.card_count = QSpinBox(minimum=1, maximum=512)
        self.radios = {key: QRadioButton(text) for key, text in (
            ("preset", "A preset"), ("config", "A Hugging Face config.json"),
            ("run", "A recorded run's shape"), ("params", "A parameter count"))}
        self.group = QButtonGroup(self)
        for radio in self.radios.values():
            self.group.addButton(radio)
        self.preset_combo = _preset_combo()
        self.config_path = QLineEdit(placeholderText="Drop a config.json or its folder here")
        self.browse = QPushButton("Browse…")
        self.run_combo = QComboBox(placeholderText=NO_RUNS, enabled=False)
        self.params_edit = QLineEdit(placeholderText="e.g. 7B, 350M or 1.5e9")
        self.resolved = QLabel(wordWrap=True, objectName="resolved")
        self.resolved.setMinimumHeight(64)
        self._layout()
        self._restore_mode()
        self._connect()
        self.setAcceptDrops(True)
        self._restore()
        sizing.load_sizable_runs(self._on_runs)

    def _layout(self) -> None:
        layout = QVBoxLayout(self.scrolling_body())
        layout.addWidget(QLabel("<b>What do you want to know?</b>"))
        layout.addWidget(self.modes["size"])
        card = QHBoxLayout()
        card.addWidget(self.modes["card"])
        card.addWidget(self.card_combo)
        card.addWidget(QLabel("×"))
        card.addWidget(self.card_count)
        card.addStretch(1)
        layout.addLayout(card)
        layout.addSpacing(10)
        layout.addWidget(QLabel("<b>Which model?</b>"))
        layout.addLayout(self._sources())
        layout.addSpacing(12)
        layout.addWidget(self.resolved)
        layout.addWidget(self.problem)
        layout.addStretch(1)
        layout.addWidget(hint_label(
            "A bare parameter count borrows the architecture of the nearest preset; a config.json "
            "gives the exact architecture and, built on the meta device, the exact count."))

    def _sources(self) -> QGridLayout:
        grid = QGridLayout()
        grid.setColumnStretch(2, 1)  # the fields stay readable-wide, not window-wide
        config = QHBoxLayout()
        config.addWidget(self.config_path, 1)
        config.addWidget(self.browse)
        rows = (("preset", self.preset_combo), ("config", config), ("run", self.run_combo),
                ("params", self.params_edit))
        for row, (key, field) in enumerate(rows):
            grid.addWidget(self.radios[key], row, 0)
            if isinstance(field, QHBoxLayout):
                grid.addLayout(field, row, 1)
            else:
                field.setMinimumWidth(FIELD_WIDTH * 2)
                grid.addWidget(field, row, 1)
        return grid

    def _connect(self) -> None:
        self.mode_group.buttonToggled.connect(self._on_mode)
        self.card_combo.currentIndexChanged.connect(self._on_mode)
        self.card_count.valueChanged.connect(self._on_mode)
        self.group.buttonToggled.connect(lambda _b, on: on and self._resolve())
        self.radios["run"].toggled.connect(self._first_run)
        self.preset_combo.activated.connect(lambda: self._use("preset"))
        self.run_combo.activated.connect(lambda: self._use("run"))
        self.params_edit.textEdited.connect(lambda: self._use("params"))
        self.config_path.editingFinished.connect(lambda: self._use("config"))
        self.browse.clicked.connect(self._browse)

    def _restore_mode(self) -> None:
        """The question of the last opening (before the widgets report their changes)."""
        d = self.draft
        self.modes[d.mode].setChecked(True)
        self.card_combo.setCurrentIndex(max(self.card_combo.findData(d.card_gpu().name), 0))
        self.card_count.setValue(d.card_count)
        self._on_mode()

    def _restore(self) -> None:
        """The model of the last opening (a config.json only if it is still there)."""
        d = self.draft
        source, value = d.source, d.source_value
        if source == "config" and not _config_file(Path(value).expanduser()).is_file():
            source, value = "preset", DEFAULT_PRESET
        if source == "preset" and self.preset_combo.findData(value) >= 0:
            self.preset_combo.setCurrentIndex(self.preset_combo.findData(value))
        widget = {"params": self.params_edit, "config": self.config_path}.get(source)
        if widget is not None:
            widget.setText(value)
        self.radios[source].setChecked(True)  # resolves through buttonToggled

    def _on_mode(self, *_args) -> None:
        d = self.draft
        d.mode = "card" if self.modes["card"].isChecked() else "size"
        d.card, d.card_count = self.card_combo.currentData(), self.card_count.value()
        self.card_combo.setEnabled(d.mode == "card")
        self.card_count.setEnabled(d.mode == "card")

    def _first_run(self, on: bool) -> None:
        """Choosing "a recorded run" picks the latest one until the user picks another."""
        if on and self.run_combo.currentIndex() < 0 and self.run_combo.count():
            self.run_combo.setCurrentIndex(0)
            self._resolve()

    # ---- Public API

    def source(self) -> str:
        return next(key for key, radio in self.radios.items() if radio.isChecked())

    def set_config(self, path: str | Path) -> None:
        self.config_path.setText(str(path))
        self._use("config")

    def start_from_run(self, run_id: int) -> None:
        """"Size a run like this…": the run's model, setup and hardware seed the whole draft."""
        try:
            inputs = self._sizing.run_inputs(run_id)
        except ValueError as err:
            self._show(None, "", str(err))
            return
        self.modes["size"].setChecked(True)
        if self.run_combo.findData(run_id) < 0:
            self.run_combo.addItem(inputs.name, run_id)
            self._runs.append(inputs)
        self.run_combo.setEnabled(True)
        self.run_combo.setCurrentIndex(self.run_combo.findData(run_id))
        self._use("run")

    def problem_text(self) -> str:
        return self._error or model_problem(self.draft)

    def busy(self) -> bool:
        return bool(self._counting)

    # ---- Resolving the chosen source

    def _use(self, source: str) -> None:
        if self.radios[source].isChecked():
            self._resolve()
        else:
            self.radios[source].setChecked(True)  # resolves through buttonToggled

    def _resolve(self) -> None:
        self._generation += 1
        self._counting = 0
        source = self.source()
        try:
            if source == "preset":
                name = self.preset_combo.currentData()
                self._show(preset(name), f"preset {name}")
            elif source == "params":
                count = parse_count(self.params_edit.text()) if self.params_edit.text() else None
                self._show(from_params(count) if count else None,
                           f"{self.params_edit.text().strip()} parameters")
            elif source == "run":
                self._use_run(self.run_combo.currentData())
            else:
                self._count_config(self.config_path.text().strip())
        except ValueError as err:  # ModelError: a count or a name that does not work
            self._show(None, "", str(err))

    def _use_run(self, run_id: int | None) -> None:
        inputs = next((r for r in self._runs if r.run_id == run_id), None)
        if inputs is None:
            self._show(None, "")
            return
        self.draft.seed(inputs.spec, inputs.setup, inputs.shape)
        self.draft.run_id = run_id
        self._show(inputs.spec, f"recorded run {inputs.name}")

    def _count_config(self, text: str) -> None:
        if not text:
            self._show(None, "")
            return
        path = Path(text).expanduser()
        if not _config_file(path).is_file():
            raise ModelError(f"no config.json at {path}")
        generation = self._counting = self._generation
        self._show(None, "")
        self.resolved.setText("Building the model on the meta device to count its parameters…")
        self._sizing.count_parameters(
            path, lambda spec: self._counted(generation, spec, path),
            lambda message: self._counted(generation, None, path, message))

    def _counted(self, generation: int, spec: ModelSpec | None, path: Path,
                 message: str = "") -> None:
        if generation != self._generation:
            return  # the user chose something else meanwhile
        self._counting = 0
        self._show(spec, f"config.json at {path}", message)

    def _show(self, spec: ModelSpec | None, origin: str, error: str = "") -> None:
        self.draft.spec, self.draft.origin, self._error = spec, origin, error
        source = self.source()
        if source != "run":
            self.draft.run_id = None
        if spec is not None and source in SOURCES:
            self.draft.source, self.draft.source_value = source, {
                "preset": self.preset_combo.currentData(), "params": self.params_edit.text(),
                "config": self.config_path.text()}[source].strip()
        text = _describe(spec) if spec else ""
        if spec and self.source() == "run":
            text += (f"<p><b>The run's setup fills the next pages</b>: "
                     f"{html.escape(setup_line(self.draft))}; "
                     f"{html.escape(hardware_line(self.draft))}.</p>")
        self.resolved.setText(text)
        self.refresh()

    def _browse(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "A model's config.json", "",
                                              "Model config (config.json *.json)")
        if name:
            self.set_config(name)

    def _on_runs(self, runs: list[RunInputs]) -> None:
        chosen = self.run_combo.currentData()
        known = {r.run_id for r in self._runs}
        self._runs += [r for r in runs if r.run_id not in known]
        self.run_combo.clear()
        for r in self._runs:
            self.run_combo.addItem(r.name, r.run_id)
        n = len(self._runs)
        # A placeholder shows while nothing is chosen, so it must not say "none" over a list.
        self.run_combo.setPlaceholderText(f"Choose one of {n} recorded run{'s' * (n > 1)}"
                                          if n else NO_RUNS)
        self.run_combo.setEnabled(bool(n))
        self.radios["run"].setText(f"A recorded run's shape ({n} usable)" if n
                                   else "A recorded run's shape")
        if chosen is not None:
            self.run_combo.setCurrentIndex(self.run_combo.findData(chosen))

    # ---- Drops

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if len(local_paths(event.mimeData())) == 1:
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event.mimeData())
        if len(paths) == 1:
            event.acceptProposedAction()
            self.set_config(paths[0])


def _preset_combo() -> QComboBox:
    combo = QComboBox()
    combo.setMaxVisibleItems(24)
    table = sorted(presets().values(), key=lambda p: p.family)
    for i, (_family, members) in enumerate(groupby(table, key=lambda p: p.family)):
        if i:
            combo.insertSeparator(combo.count())
        for p in members:
            combo.addItem(f"{p.name}   ({p.n_params / 1e9:.3g}B)", p.name)
    combo.setCurrentIndex(combo.findData(DEFAULT_PRESET))
    return combo


def _describe(spec: ModelSpec) -> str:
    moe = (f", {spec.n_experts} experts ({spec.n_active_experts} active)" if spec.is_moe else "")
    lines = [
        f"<b>{html.escape(spec.name)}</b>: <b>{spec.total_params / 1e9:.3g}B parameters</b> "
        f"({spec.total_params:,})",
        f"{spec.family} architecture: {spec.n_layers} layers, hidden {spec.hidden:,}, "
        f"{spec.n_heads} heads ({spec.n_kv_heads} KV), MLP {spec.intermediate:,}, "
        f"vocabulary {spec.vocab:,}{moe}",
    ]
    if spec.note:
        lines.append(f"<span style='color:#8d6e00'>{html.escape(_note(spec.note))}</span>")
    if spec.source:
        source = SOURCES_SAID.get(spec.source, spec.source)
        lines.append(f"<span style='color:#7b8794'>{html.escape(source)}</span>")
    rows = "".join(f"<tr><td>{name}</td><td>&nbsp;&nbsp;{html.escape(text)}</td></tr>"
                   for name, text in parameter_parts(spec))
    return "<br>".join(lines) + f"<p><b>Where the parameters are</b></p><table>{rows}</table>"


def _config_file(path: Path) -> Path:
    return path / "config.json" if path.is_dir() else path


def _note(note: str) -> str:
    return "Borrowed the " + note if note.startswith("shape of") else note
