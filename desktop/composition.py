"""The composition root: every service of the app, built once, handed to the window and panels.

:func:`compose` builds the services beside :class:`AppServices` (each a child
of it, sharing its worker pool and clock) and returns them in a
:class:`Services` bundle; the main window and the panels take the ones they
use as constructor arguments. Nothing else builds a service: views call
methods and connect signals. desktop/app.py and the tests' window fixtures go
through here, so the app is wired one way.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop.alert_services import AlertServices
from desktop.compare_services import CompareServices
from desktop.live_services import LiveServices
from desktop.project_services import ProjectServices
from desktop.services import AppServices
from desktop.settings import Settings
from desktop.sizing_services import SizingServices
from desktop.team_services import TeamServices


@dataclass(frozen=True)
class Services:
    app: AppServices
    compare: CompareServices
    sizing: SizingServices
    projects: ProjectServices
    alerts: AlertServices
    live: LiveServices
    team: TeamServices


def compose(app: AppServices, settings: Settings) -> Services:
    """Every satellite service around ``app`` (whose store may still be opening)."""
    return Services(app=app, compare=CompareServices(app, settings), sizing=SizingServices(app),
                    projects=ProjectServices(app), alerts=AlertServices(app, settings),
                    live=LiveServices(app, settings, clock=app.clock),
                    team=TeamServices(app, settings))
