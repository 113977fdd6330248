"""The window's panels in one table: where each goes and how it is built.

A later feature (a Checkpoints tab, a Findings dock) is one row here. Each
factory takes the app's services (built once by desktop/composition.py) and
settings, hands the panel the services it uses, and returns its widget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QWidget

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

if TYPE_CHECKING:
    from desktop.composition import Services


@dataclass(frozen=True)
class PanelSpec:
    key: str
    title: str
    factory: Callable[[Services, Settings], QWidget]
    # "tab": beside the plots; "left": under the runs table, shown when it has news;
    # "bottom"/"right": a dock the user can move or close.
    area: str


PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("plots", "Plots", lambda s, settings: PlotsPanel(s.app, settings, s.compare), "tab"),
    PanelSpec("details", "Details", lambda s, _settings: DetailsPanel(s.app), "tab"),
    PanelSpec("compare", "Compare", lambda s, _settings: CompareView(s.app, s.compare), "tab"),
    PanelSpec("scatter", "Scatter",
              lambda s, settings: ScatterPanel(s.app, settings, s.compare, s.sizing), "tab"),
    PanelSpec("checkpoints", "Checkpoints", lambda s, _settings: CheckpointsPanel(s.app), "tab"),
    PanelSpec("calibration", "Calibration", lambda s, _settings: CalibrationPanel(s.sizing),
              "tab"),
    PanelSpec("findings", "Findings", lambda s, _settings: FindingsPanel(s.app), "left"),
    PanelSpec("groups", "Run Groups", lambda s, _settings: GroupsPanel(s.app, s.compare), "left"),
    PanelSpec("ingest", "Ingest Report", lambda s, _settings: IngestPanel(s.app), "left"),
    PanelSpec("watch", "Watched Folders",
              lambda s, settings: WatchPanel(s.live, s.alerts, settings), "left"),
)
