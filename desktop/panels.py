"""The window's panels in one table: where each goes and how it is built.

A later feature (a Checkpoints tab, a Findings dock) is one row here. Each
factory takes the app services and settings and returns the panel's widget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtWidgets import QWidget

from desktop.live_services import LiveServices
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.views.calibration_panel import CalibrationPanel
from desktop.views.checkpoints_panel import CheckpointsPanel
from desktop.views.compare_view import CompareView
from desktop.views.details_panel import DetailsPanel
from desktop.views.findings_panel import FindingsPanel
from desktop.views.groups_panel import GroupsPanel
from desktop.views.ingest_panel import IngestPanel
from desktop.views.plots_panel import PlotsPanel
from desktop.views.scatter_panel import ScatterPanel
from desktop.views.watch_panel import WatchPanel


@dataclass(frozen=True)
class PanelSpec:
    key: str
    title: str
    factory: Callable[[AppServices, Settings], QWidget]
    # "tab": beside the plots; "left": under the runs table, shown when it has news;
    # "bottom"/"right": a dock the user can move or close.
    area: str


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("plots", "Plots", PlotsPanel, "tab"),
    PanelSpec("details", "Details", lambda services, _settings: DetailsPanel(services), "tab"),
    PanelSpec("compare", "Compare", lambda services, _settings: CompareView(services), "tab"),
    PanelSpec("scatter", "Scatter", ScatterPanel, "tab"),
    PanelSpec("checkpoints", "Checkpoints",
              lambda services, _settings: CheckpointsPanel(services), "tab"),
    PanelSpec("calibration", "Calibration",
              lambda services, _settings: CalibrationPanel(services), "tab"),
    PanelSpec("findings", "Findings", lambda services, _settings: FindingsPanel(services), "left"),
    PanelSpec("groups", "Run Groups", GroupsPanel, "left"),
    PanelSpec("ingest", "Ingest Report", lambda services, _settings: IngestPanel(services), "left"),
    PanelSpec("watch", "Watched Folders",
              lambda services, settings: WatchPanel(LiveServices(services, settings), settings),
              "left"),
)
