"""Project rows (their TOML text) and the runs linked to their stages."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select

from tracker.db.schema import ProjectLinkRow, ProjectRow, Run
from tracker.db.unit import Unit

ROLES = ("pilot", "run")


@dataclass(frozen=True)
class StoredProject:
    id: int
    name: str
    source: str
    base_dir: str
    updated_at: datetime


@dataclass(frozen=True)
class Link:
    """A run linked to a stage, with what the stage's status needs to know of the run."""

    variant: str
    stage: str
    run_id: int
    role: str
    card: str | None
    run_name: str
    run_status: str


def _stored(row: ProjectRow) -> StoredProject:
    return StoredProject(row.id, row.name, row.source, row.base_dir, row.updated_at)


def save(unit: Unit, project_id: int | None, name: str, source: str,
         base_dir: str) -> StoredProject:
    """Create a project, or replace the text of ``project_id`` (its name may change)."""
    now = datetime.now(UTC)
    row = unit.session.get(ProjectRow, project_id) if project_id is not None else None
    if row is None:
        row = ProjectRow(name=name, source=source, base_dir=base_dir, created_at=now,
                         updated_at=now)
    row.name, row.source, row.updated_at = name, source, now
    row.base_dir = base_dir or row.base_dir
    unit.session.add(row)
    unit.session.flush()
    return _stored(row)


def by_name(unit: Unit, name: str) -> StoredProject | None:
    row = unit.session.execute(select(ProjectRow).where(ProjectRow.name == name)).scalar_one_or_none()
    return _stored(row) if row else None


def by_id(unit: Unit, project_id: int) -> StoredProject | None:
    row = unit.session.get(ProjectRow, project_id)
    return _stored(row) if row else None


def every(unit: Unit) -> list[StoredProject]:
    rows = unit.session.execute(select(ProjectRow).order_by(ProjectRow.name)).scalars()
    return [_stored(r) for r in rows]


def remove(unit: Unit, project_id: int) -> int:
    return unit.session.execute(delete(ProjectRow).where(ProjectRow.id == project_id)).rowcount


def link(unit: Unit, project_id: int, variant: str, stage: str, run_id: int, role: str,
         card: str | None) -> None:
    """Link a run to a stage (linking it again updates its role and card)."""
    row = unit.session.execute(select(ProjectLinkRow).where(
        ProjectLinkRow.project_id == project_id, ProjectLinkRow.variant == variant,
        ProjectLinkRow.stage == stage, ProjectLinkRow.run_id == run_id)).scalar_one_or_none()
    row = row or ProjectLinkRow(project_id=project_id, variant=variant, stage=stage,
                                run_id=run_id, role=role, linked_at=datetime.now(UTC))
    row.role, row.card = role, card
    unit.session.add(row)


def unlink(unit: Unit, project_id: int, variant: str, stage: str, run_id: int) -> int:
    return unit.session.execute(delete(ProjectLinkRow).where(
        ProjectLinkRow.project_id == project_id, ProjectLinkRow.variant == variant,
        ProjectLinkRow.stage == stage, ProjectLinkRow.run_id == run_id)).rowcount


def links(unit: Unit, project_id: int) -> list[Link]:
    rows = unit.session.execute(
        select(ProjectLinkRow, Run.name, Run.status).join(Run, Run.id == ProjectLinkRow.run_id)
        .where(ProjectLinkRow.project_id == project_id).order_by(ProjectLinkRow.id)).all()
    return [Link(r.variant, r.stage, r.run_id, r.role, r.card, name, status)
            for r, name, status in rows]
