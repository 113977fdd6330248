"""The result page's "Simulate on the model's code": one real step on fake tensors, in the pool.

The analytical figure is instant; the simulation builds the model with
transformers and steps it under PyTorch's memory tracker, which takes
seconds (the first one also imports torch). It runs in the worker pool with
a progress bar and a cancel button, and shows its figure beside the
analytical one it checks. A what-if change marks the shown result stale.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from core.memory import GIB, estimate
from desktop.presenters.sizing_form import Draft
from desktop.sizing_services import SizingServices
from desktop.views.sizing.page import hint_label
from desktop.workers import Worker


class SimulateBox(QWidget):
    """A button that simulates the draft's step, its progress and cancel, and the figure."""

    def __init__(self, sizing: SizingServices, draft: Draft) -> None:
        super().__init__()
        self._sizing, self.draft = sizing, draft
        self.worker: Worker | None = None
        self.button = QPushButton("Simulate on the model's code")
        self.button.setToolTip("Build the model with transformers on fake tensors and count "
                               "one training step with PyTorch's memory tracker (seconds)")
        self.cancel_button = QPushButton("Cancel")
        self.progress = QProgressBar(textVisible=False, maximumHeight=10)
        self.result = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText,
                             objectName="simulated")
        self.status = hint_label()
        row = QHBoxLayout()
        row.addWidget(self.button)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.result)
        self.button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self._running(False)

    @property
    def running(self) -> bool:
        return self.worker is not None

    def start(self) -> None:
        if self.running or self.draft.spec is None:
            return
        setup = self.draft.setup()
        self._asked = (self.draft.spec, setup)
        self.result.clear()
        self.status.setText("Importing the model's code…")
        self.progress.setRange(0, 0)  # busy until the first report
        self._running(True)
        self.worker = self._sizing.simulate(self.draft.spec, setup, self._on_result,
                                            self._on_error, self._on_progress)

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.status.setText("Stopping after the model being stepped…")

    def stale(self) -> None:
        """The draft changed: the figure shown no longer describes it."""
        if self.result.text():
            self.status.setText("The setup changed since: simulate again for a current figure")

    def _on_progress(self, done: int, total: int, label: str) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.status.setText(f"{label.capitalize()}…" if done < total else "")

    def _on_result(self, simulation) -> None:
        self._running(False)
        if simulation is None:
            self.status.setText("Simulation cancelled")
            return
        self.status.setText("")
        self.result.setText(result_html(simulation, *self._asked))

    def _on_error(self, message: str) -> None:
        self._running(False)
        self.status.setText(f"Cannot simulate: {message}")

    def _running(self, running: bool) -> None:
        if not running:
            self.worker = None
        self.button.setEnabled(not running)
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running)


def result_html(simulation, spec, setup) -> str:
    """The simulated figure beside the analytical one it checks (workspace left out of both)."""
    est = estimate(spec, setup)
    analytical = (est.allocated - est.breakdown["overhead"]) / GIB
    parts = ", ".join(f"{name.replace('_', ' ')} {gib:.2f}"
                      for name, gib in simulation.gib().items() if gib >= 0.005)
    notes = "".join(f"<br><small>{note}</small>" for note in simulation.notes)
    return (f"<b>Simulated: {simulation.allocated / GIB:.2f} GiB</b> allocated at the "
            f"{simulation.phase} (analytical {analytical:.2f} GiB without workspace), "
            f"in {simulation.seconds:.1f} s<br>{parts}{notes}")
