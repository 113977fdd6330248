"""The "Size my next run" wizard: four pages over one Draft, opened from the toolbar or a run.

It is not modal: a click on a past run the calibrated figure leaned on shows
that run in the main window while the wizard stays open. Once a result has
been shown, the GPUs compared and the token budget are remembered for next time.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QWidget, QWizard

from desktop.presenters.sizing_form import Draft
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.sizing_services import sizing_for
from desktop.views.sizing.hardware_page import HardwarePage
from desktop.views.sizing.model_page import ModelPage
from desktop.views.sizing.result_page import ResultPage
from desktop.views.sizing.training_page import TrainingPage

SIZE = QSize(1200, 860)


class SizingWizard(QWizard):
    sig_open_run = Signal(int)
    """Show this run in the main window."""

    def __init__(self, services: AppServices, settings: Settings, run_id: int | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Size my next run")
        self.setObjectName("sizingWizard")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage)
        self.resize(SIZE)
        self._settings = settings
        self.draft = Draft(gpus=settings.sizing_gpus, tokens=settings.sizing_tokens)
        sizing = sizing_for(services)
        sizing.calibration()  # fit now, so it is ready by the last page
        self.model_page = ModelPage(self.draft, sizing)
        self.training_page = TrainingPage(self.draft)
        self.hardware_page = HardwarePage(self.draft)
        self.result_page = ResultPage(self.draft, sizing)
        for page in (self.model_page, self.training_page, self.hardware_page, self.result_page):
            self.addPage(page)
        self.result_page.sig_open_run.connect(self.sig_open_run)
        self.currentIdChanged.connect(self._remember)
        if run_id is not None:
            self.model_page.start_from_run(run_id)

    def done(self, result: int) -> None:
        self._remember()
        super().done(result)

    def _remember(self) -> None:
        if self.currentPage() is self.result_page:
            if not self.draft.recommend:
                self._settings.sizing_gpus = self.draft.gpus
            self._settings.sizing_tokens = self.draft.tokens
