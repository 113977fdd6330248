"""What the views that compare runs share, beside :class:`AppServices`: groups and requests.

One per app, built by the composition root. It holds how the selected runs are grouped
(the plots draw the groups, the groups table aggregates them, the Compare tab
compares them) and carries two requests from the summary views to the runs
panel: select these runs (a click on a point), filter by this query
(brushing the parallel coordinates).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from core.query import QueryError
from desktop.presenters.groups import Grouping
from desktop.services import AppServices
from desktop.settings import Settings
from tracker.groups import Group, GroupBy, assign, group_by, groups
from tracker.model import RunSummary


class CompareServices(QObject):
    sig_grouping_changed = Signal(object)
    """The user's :class:`Grouping` changed (the views regroup)."""
    sig_select_requested = Signal(list)
    """Select these run ids in the runs table."""
    sig_filter_requested = Signal(str)
    """Put this query in the runs panel's filter box ("" clears it)."""

    def __init__(self, services: AppServices, settings: Settings | None = None) -> None:
        super().__init__(services)
        self._services, self._settings = services, settings
        self.grouping = Grouping(**settings.grouping) if settings is not None else Grouping()
        self.error = ""  # why the group-by text cannot be read ("" when it can)

    def set_grouping(self, grouping: Grouping) -> None:
        if grouping != self.grouping:
            self.grouping = grouping
            if self._settings is not None:
                self._settings.grouping = grouping.__dict__
            self.sig_grouping_changed.emit(grouping)

    def group_by(self) -> GroupBy | None:
        """The grouping field, or None when grouping is off or its text has a mistake."""
        self.error = ""
        if not self.grouping.active:
            return None
        try:
            return group_by(self.grouping.by)
        except QueryError as err:
            self.error = str(err)
            return None

    def assignment(self, run_ids: list[int]) -> dict[int, str]:
        """Each run's group ({} when grouping is off)."""
        runs, by = self._runs(run_ids)
        if by is None:
            return {}
        return {r.id: key for key, members in assign(runs, by, self._extras(runs, by)).items()
                for r in members}

    def groups(self, run_ids: list[int]) -> list[Group]:
        """The groups of these runs with their aggregate figures ([] when grouping is off)."""
        runs, by = self._runs(run_ids)
        return [] if by is None else groups(runs, by, self._extras(runs, by))

    def select(self, run_ids: list[int]) -> None:
        self.sig_select_requested.emit(list(run_ids))

    def filter(self, query: str) -> None:
        self.sig_filter_requested.emit(query)

    def _runs(self, run_ids: list[int]) -> tuple[list[RunSummary], GroupBy | None]:
        by = self.group_by()
        return (self._services.runs(run_ids) if by is not None else []), by

    def _extras(self, runs: list[RunSummary], by: GroupBy) -> dict:
        if not by.needs_extras or not runs:
            return {}
        return self._services.extras([r.id for r in runs])
