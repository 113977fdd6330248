"""A compiled query as SQL: each term whose field is a column, a tag or a series summary.

The run's own columns compare directly; tags and series summaries through
subqueries on their tables (indexed by run); shape fields through the JSON
column's paths, which SQLAlchemy writes for SQLite and PostgreSQL alike.
What SQL cannot say (config keys, the worst finding, list-valued shape
fields) is left for Python: :func:`split` returns the SQL clause of every
part that can go to the database and the tree of what remains. Every term
is wrapped so that a missing value reads as :mod:`tracker.query` reads it
(SQL's NULL would make ``not (x > 5)`` false for a run without ``x``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, case, exists, false, func, not_, or_, select, true

from core.diagnostics.finding import SEVERITIES
from core.query import All, Not
from tracker.db.schema import FindingRow, Run, RunTag, SeriesRow
from tracker.db.unit import Unit
from tracker.fields import FLAG, MEMORY_METRICS, NUMBER, Field
from tracker.query import ORDER, Term


def split(tree: Any, dialect: str) -> tuple[ColumnElement[bool] | None, Any]:
    """(SQL for the parts of ``tree`` the database can answer, the tree Python must check).

    Parts joined by ``and`` are taken one by one; an ``or`` or a ``not`` goes
    to SQL only when everything under it can. None means "nothing" on either side.
    """
    if isinstance(tree, All):
        done = [split(part, dialect) for part in sorted(tree.parts, key=_cost)]
        clauses = [c for c, _ in done if c is not None]
        rest = tuple(r for _, r in done if r is not None)
        clause = and_(*clauses) if clauses else None
        return clause, (rest[0] if len(rest) == 1 else All(rest)) if rest else None
    clause = _clause(tree, dialect)
    return (clause, None) if clause is not None else (None, tree)


# What a term costs per row, roughly: SQLite checks ``and`` clauses in order, so the cheap
# ones go first and the JSON parses and regular expressions see fewer rows.
STATED = {"finished", "crashed"}
COSTS = {"column": 0, "status": 0, "tags": 1, "metric": 2, "peak": 2, "steps": 2, "severity": 2, "shape": 4}


def _cost(node: Any) -> int:
    if isinstance(node, Term):
        return COSTS.get(node.field.source[0], 5) + (2 if node.op == "~" else 0)
    if isinstance(node, Not):
        return _cost(node.part)
    return max(_cost(p) for p in node.parts)


def matching_ids(unit: Unit, clause: ColumnElement[bool] | None) -> list[int]:
    """Ids of the runs ``clause`` keeps (every run for None), newest first."""
    query = select(Run.id).order_by(Run.id.desc())
    if clause is not None:
        query = query.where(clause)
    return list(unit.session.execute(query).scalars())


def extras(unit: Unit, run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Each run's config and stated summary, for the fields that read them."""
    rows = unit.session.execute(select(Run.id, Run.config, Run.summary).where(Run.id.in_(run_ids)))
    return {run_id: {"config": config or {}, "summary": summary or {}}
            for run_id, config, summary in rows}


def _clause(node: Any, dialect: str) -> ColumnElement[bool] | None:
    if isinstance(node, Term):
        return _term(node, dialect)
    if isinstance(node, Not):
        inner = _clause(node.part, dialect)
        return None if inner is None else not_(inner)
    parts = [_clause(p, dialect) for p in node.parts]
    if any(p is None for p in parts):
        return None
    return and_(*parts) if isinstance(node, All) else or_(*parts)


def _term(term: Term, dialect: str) -> ColumnElement[bool] | None:
    source = term.field.source
    if source[0] == "tags":
        return _tags(term, dialect)
    if source[0] == "status":
        return _status(term)
    value = _value(term.field)
    if value is None:
        return None
    return _compare(value, term.op, term.value, dialect)


def _value(field: Field) -> ColumnElement | None:
    """The field as a SQL expression over ``run`` (None: only Python can read it)."""
    kind, *rest = field.source
    if kind == "column":
        return getattr(Run, rest[0])
    if kind == "metric":
        return _stat(rest[0], rest[1])
    if kind == "peak":
        return func.coalesce(*(_stat(m, "max") for m in MEMORY_METRICS))
    if kind == "severity":
        return _worst_severity()
    if kind == "steps":
        return select(func.max(SeriesRow.last_step)).where(
            SeriesRow.run_id == Run.id).scalar_subquery()
    if kind == "shape" and field.kind != "list":
        path = Run.shape[("values", rest[0])]
        if field.kind == NUMBER:
            return path.as_float()
        return path.as_boolean() if field.kind == FLAG else path.as_string()
    return None


def _worst_severity() -> ColumnElement:
    """The run's worst finding, by rank in one subquery on the run's findings (asking for each
    severity in turn lets SQLite scan the severity index instead, once per run)."""
    ranks = dict(enumerate(SEVERITIES, start=1))
    rank = case({s: r for r, s in ranks.items()}, value=FindingRow.severity, else_=0)
    worst = select(func.max(rank)).where(FindingRow.run_id == Run.id).scalar_subquery()
    return case(ranks, value=worst, else_=None)


def _stat(metric: str, stat: str) -> ColumnElement:
    return select(getattr(SeriesRow, stat)).where(
        SeriesRow.run_id == Run.id, SeriesRow.name == metric).scalar_subquery()


def _compare(value: ColumnElement, op: str, want: Any, dialect: str) -> ColumnElement[bool]:
    if op == "==":
        return value.is_(None) if want is None else func.coalesce(value == want, false())
    if op == "!=":
        return value.is_not(None) if want is None else func.coalesce(value != want, true())
    if op in ("in", "not in"):
        listed = [w for w in want if w is not None]
        inside = or_(func.coalesce(value.in_(listed), false()),
                     value.is_(None) if None in want else false())
        return inside if op == "in" else not_(inside)
    if op in ("has", "not has"):
        has = func.coalesce(func.lower(value).contains(want.lower(), autoescape=True), false())
        return has if op == "has" else not_(has)
    if op == "~":
        return func.coalesce(_regexp(value, want, dialect), false())
    return func.coalesce(ORDER[op](value, want), false())


def _regexp(value: ColumnElement, pattern: str, dialect: str) -> ColumnElement[bool]:
    """A case-insensitive search: SQLite's REGEXP (Python's ``re``) takes the flag inline."""
    if dialect == "sqlite":
        return value.regexp_match(f"(?i){pattern}")
    return value.regexp_match(pattern, flags="i")


def _status(term: Term) -> ColumnElement[bool] | None:
    """Finished and crashed are what a log states, so the stored column answers; running,
    crashed? and unknown depend on how long ago the log grew, which Python decides."""
    values = term.value if isinstance(term.value, tuple) else (term.value,)
    if term.op not in ("==", "!=", "in", "not in") or not set(values) <= STATED:
        return None
    return _compare(Run.status, term.op, term.value, "")


def _tags(term: Term, dialect: str) -> ColumnElement[bool]:
    tag = RunTag.tag == term.value if term.op != "~" else _regexp(RunTag.tag, term.value, dialect)
    found = exists().where(RunTag.run_id == Run.id, tag)
    return not_(found) if term.op == "not has" else found
