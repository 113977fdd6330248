"""The "Size my next run" wizard: four pages over one Draft, opened from the toolbar or a run.

It is not modal: a click on a past run the calibrated figure leaned on shows
that run in the main window while the wizard stays open. "What can my card
run?" names the cards on the first page, so it skips the hardware page. The
model and training choices are remembered whenever a page is left, and the
GPUs compared once a result has been shown. It fits a 1280×800 screen: pages
scroll when they need more room.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QWidget, QWizard

from desktop.presenters.sizing_form import Draft
from desktop.settings import Settings
from desktop.sizing_services import SizingServices
from desktop.views.sizing.hardware_page import HardwarePage
from desktop.views.sizing.model_page import ModelPage
from desktop.views.sizing.result_page import ResultPage
from desktop.views.sizing.training_page import TrainingPage

SIZE = QSize(1240, 740)  # within a 1280x800 screen, with the window's title bar


class SizingWizard(QWizard):
    sig_open_run = Signal(int)
    """Show this run in the main window."""

    def __init__(self, sizing: SizingServices, settings: Settings, run_id: int | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Size my next run")
        self.setObjectName("sizingWizard")
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage)
        self.resize(SIZE)
        self._settings = settings
        self.draft = Draft(gpus=settings.sizing_gpus)
        self.draft.recall(settings.sizing_choices)
        sizing.calibration()  # fit now, so it is ready by the last page
        self.model_page = ModelPage(self.draft, sizing, settings)
        self.training_page = TrainingPage(self.draft)
        self.hardware_page = HardwarePage(self.draft)
        self.result_page = ResultPage(self.draft, sizing, settings)
        self.ids = {page: self.addPage(page) for page in (
            self.model_page, self.training_page, self.hardware_page, self.result_page)}
        self.result_page.sig_open_run.connect(self.sig_open_run)
        self.currentIdChanged.connect(self._remember)
        if run_id is not None:
            self.model_page.start_from_run(run_id)

    def nextId(self) -> int:
        if self.currentPage() is self.training_page and self.draft.mode == "card":
            return self.ids[self.result_page]  # the cards were named on the first page
        return super().nextId()

    def done(self, result: int) -> None:
        self._remember()
        super().done(result)

    def _remember(self) -> None:
        self._settings.sizing_choices = self.draft.remembered()
        d = self.draft
        if self.currentPage() is self.result_page and d.mode == "size" and not d.recommend:
            self._settings.sizing_gpus = d.gpus
