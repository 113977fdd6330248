"""Projects in the tracker: stored as TOML, their stages linked to runs, planned on the history.

The command line (``headroom plan``) and the app's Project view both plan
through :func:`plan`, so they show the same figures. What the database adds
to a project file: the calibration fitted on every stored run (held out by
experiment, so its trust is earned), the pilots linked to stages, and each
stage's status from the runs linked to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.calibration import Calibration
from core.gpus import GPU, find
from core.memory import ModelSpec
from core.memory.from_shape import inputs_from_shape
from core.metrics import MEMORY_COUNTERS
from core.pilot import PilotRun, run_checks, throughput_of
from core.project import Project, ProjectError, loads
from core.project_plan import Evidence, ProjectPlan, plan_project, stage_status
from tracker.calibration import calibrate
from tracker.db import projects as rows
from tracker.db.projects import ROLES, Link, StoredProject
from tracker.store import Store


@dataclass(frozen=True)
class Planned:
    """A project's plan with what the database said about it."""

    plan: ProjectPlan
    stored: StoredProject | None = None
    links: list[Link] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # links that could not be used, and why


def read(source: str, base_dir: str = "") -> Project:
    """A project from its TOML text (ProjectError: one line naming the table and field)."""
    return loads(source, Path(base_dir) if base_dir else None)


def save(store: Store, source: str, base_dir: str = "",
         project_id: int | None = None) -> StoredProject:
    """Store a project's text (checked first); ``project_id`` replaces that one's text."""
    project = read(source, base_dir)
    with store.session() as s:
        other = rows.by_name(s, project.name)
        if other is not None and other.id != project_id and project_id is not None:
            raise ProjectError(f"[project], field \"name\": another project is called "
                               f"{project.name!r}")
        target = project_id if project_id is not None else (other.id if other else None)
        return rows.save(s, target, project.name, source, base_dir)


def projects(store: Store) -> list[StoredProject]:
    with store.session() as s:
        return rows.every(s)


def find_project(store: Store, ref: str) -> StoredProject:
    """A stored project by its exact name, or by id."""
    with store.session() as s:
        found = rows.by_name(s, ref) or (rows.by_id(s, int(ref)) if ref.isdigit() else None)
    if found is None:
        raise ProjectError(f"no stored project {ref!r} (headroom plan FILE --save stores one)")
    return found


def stored_as(store: Store, name: str) -> StoredProject | None:
    with store.session() as s:
        return rows.by_name(s, name)


def delete(store: Store, project_id: int) -> None:
    """Forget a project and its links (the runs stay)."""
    with store.session() as s:
        rows.remove(s, project_id)


def links(store: Store, project_id: int) -> list[Link]:
    with store.session() as s:
        return rows.links(s, project_id)


def link(store: Store, stored: StoredProject, stage_ref: str, run_id: int, role: str = "pilot",
         card: str | None = None) -> tuple[str, str]:
    """Link a stored run to a stage ("variant/stage" or a stage name); returns the stage's key."""
    if role not in ROLES:
        raise ProjectError(f"a linked run is a {' or a '.join(ROLES)}, not {role!r}")
    project = read(stored.source, stored.base_dir)
    variant, stage = project.stage(stage_ref)
    if card is not None and project.card(card) is None and find(card) is None:
        raise ProjectError(f"unknown card {card!r}: name a pool card or one of the catalog's")
    store.run(run_id)  # RunNotFound for a run that is not stored
    with store.session() as s:
        rows.link(s, stored.id, variant.name, stage.name, run_id, role, card)
    return variant.name, stage.name


def unlink(store: Store, stored: StoredProject, stage_ref: str, run_id: int) -> int:
    variant, stage = read(stored.source, stored.base_dir).stage(stage_ref)
    with store.session() as s:
        return rows.unlink(s, stored.id, variant.name, stage.name, run_id)


def plan(project: Project, store: Store | None = None, stored: StoredProject | None = None,
         history: bool = True) -> Planned:
    """Plan ``project`` with what ``store`` knows: history, and ``stored``'s linked runs."""
    if store is None:
        return Planned(plan_project(project))
    calibration = _history(store) if history else None
    found = links(store, stored.id) if stored else []
    pilots, notes = {}, []
    for item in (i for i in found if i.role == "pilot"):
        try:
            pilots[(item.variant, item.stage)] = pilot_run(store, item, project)
        except ValueError as err:
            notes.append(f"pilot run {item.run_id} of stage {item.stage!r}: {err}")
    status = {}
    for item in found:
        key = (item.variant, item.stage)
        status[key] = stage_status([(i.role, i.run_status) for i in found
                                    if (i.variant, i.stage) == key])
    evidence = Evidence(calibration, pilots, status, lambda run_id: _run_spec(store, run_id))
    return Planned(plan_project(project, evidence), stored, found, notes)


def _history(store: Store) -> Calibration | None:
    if not store.run_count():
        return None
    calibration, _ = calibrate(store, with_errors=True)
    return calibration if calibration.samples else None


def _run_spec(store: Store, run_id: int) -> ModelSpec:
    return inputs_from_shape(store.run(run_id).shape)[0]


def pilot_run(store: Store, item: Link, project: Project) -> PilotRun:
    """What a linked pilot recorded, as evidence for its stage (ValueError when its shape
    says too little to extrapolate from)."""
    run = store.run(item.run_id)
    spec, setup, _ = inputs_from_shape(run.shape)
    rates = _values(store, run.id, "tokens_per_s", run.series)
    tokens_per_s, spread = throughput_of(rates)
    memory = any((run.stat(name, "max") or 0) > 0 for name in MEMORY_COUNTERS)
    checks = run_checks(_values(store, run.id, "loss", run.series),
                        run.stat("eval_loss", "count") or 0, store.findings(run.id), rates)
    return PilotRun(run.id, run.name, spec, setup, _card(project, item.card or run.shape.gpu_model),
                    tokens_per_s, spread, memory, checks)


def _values(store: Store, run_id: int, name: str, series: dict) -> np.ndarray:
    return store.series(run_id, name).values if name in series else np.zeros(0)


def _card(project: Project, name: str | None) -> GPU | None:
    """The card a run ran on: the pool's entry (its own prices and figures), else the catalog's."""
    if not name:
        return None
    card = project.card(name)
    return card.gpu if card else find(name)
