"""Queries over runs: ``headroom runs --where`` and the app's filter box, with one meaning.

:func:`compile` reads the text (:func:`core.query.parse`), resolves each
field (:mod:`tracker.fields`) and checks that its operator and value make
sense for it, so a mistake is reported with its column before anything
runs. :meth:`Query.matches` answers for a run the app already holds;
:func:`matching_ids` asks the database, in SQL for every part that is a column
(:mod:`tracker.db.query`) and in Python for the rest. Both read a missing
value alike: it equals only None, differs from everything else, and is
neither above nor below any number.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core.query import All, Compare, Either, Not, QueryError, leaves, parse
from tracker.fields import ANY, FLAG, LIST, NUMBER, TEXT, TIME, Extras, Field, resolve
from tracker.model import RunSummary

if TYPE_CHECKING:
    from tracker.store import Store

Live = Callable[[list[RunSummary]], object]

ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
# The operators each kind of field takes.
ALLOWED = {
    TEXT: {"==", "!=", "~", "in", "not in", "has", "not has", *ORDER},
    NUMBER: {"==", "!=", "in", "not in", *ORDER},
    FLAG: {"==", "!="},
    LIST: {"has", "not has", "~"},
    TIME: {"==", "!=", *ORDER},
    ANY: {"==", "!=", "~", "in", "not in", *ORDER},
}
HINTS = {
    TEXT: 'text: compare it with a string in quotes, as in method == "lora"',
    NUMBER: "a number: compare it with a number, as in seq_len >= 2048",
    FLAG: "True or False: write compile == True, or just compile",
    LIST: 'a list: write "value" in tags, or tags ~ "pattern"',
    TIME: 'a time: compare it with a date in quotes, as in started_at > "2024-05-01"',
    ANY: "a config value: compare it with a number or a string",
}


@dataclass(frozen=True)
class Term:
    """One comparison, its field resolved and its value checked."""

    field: Field
    op: str
    value: Any
    column: int


@dataclass(frozen=True)
class Query:
    """A compiled query: its text and its tree of :class:`Term` under All / Either / Not."""

    text: str
    tree: Any

    @property
    def terms(self) -> list[Term]:
        return list(leaves(self.tree))

    @property
    def needs_extras(self) -> bool:
        """Whether answering needs each run's config or summary (see :func:`tracker.fields`)."""
        return any(t.field.needs_extras for t in self.terms)

    def matches(self, run: RunSummary, extras: Extras | None = None) -> bool:
        return _holds(self.tree, run, extras)


def compile(text: str, metrics: Iterable[str] = ()) -> Query:  # noqa: A001 (re.compile's sense)
    """Read and check ``text`` (raises :class:`QueryError` with the column of the mistake).

    ``metrics``, the metric names the runs have, only improve the suggestions.
    """
    metrics = list(metrics)
    return Query(text, _bind(parse(text), metrics))


def matching_ids(store: Store, query: Query, live: Live | None = None) -> list[int]:
    """Ids of the stored runs that match, newest first: SQL where it can, Python for the rest.

    ``live`` sets the status each run shows (a silent running run is "crashed?") on the runs
    Python checks; SQL answers only for the statuses a log states itself.
    """
    return [r if isinstance(r, int) else r.id for r in _matching(store, query, live, False)]


def select_runs(store: Store, query: Query, live: Live | None = None) -> list[RunSummary]:
    """The summaries of the runs that match, newest first, as ``live`` shows them."""
    return _matching(store, query, live, True)


def _matching(store: Store, query: Query, live: Live | None, summaries: bool) -> list:
    from tracker.db import query as sql

    with store.session() as unit:
        clause, rest = sql.split(query.tree, unit.dialect)
        ids = sql.matching_ids(unit, clause)
        if (rest is None and not summaries) or not ids:
            return ids
        extras = sql.extras(unit, ids) if rest is not None and query.needs_extras else {}
    runs = store.runs(ids)
    if live is not None:
        live(runs)
    return runs if rest is None else [r for r in runs if _holds(rest, r, extras.get(r.id))]


def _bind(node: Any, metrics: list[str]) -> Any:
    if isinstance(node, Compare):
        return _term(node, resolve(node.ref, metrics), metrics)
    if isinstance(node, Not):
        return Not(_bind(node.part, metrics))
    parts = tuple(_bind(p, metrics) for p in node.parts)
    return All(parts) if isinstance(node, All) else Either(parts)


def _term(node: Compare, field: Field, metrics: list[str]) -> Term:
    if node.op not in ALLOWED[field.kind]:
        raise QueryError(f"'{_said(node.op)}' does not apply to {field.name}, which is "
                         f"{HINTS[field.kind]}", node.ref.column)
    values = node.value if isinstance(node.value, tuple) else (node.value,)
    try:
        checked = tuple(_checked(field, node, v) for v in values)
    except QueryError as err:
        if field.source[0] == "shape" and field.name in metrics:
            raise QueryError(f"{field.name} is {field.kind} (the shape's {field.name}); for "
                             f"the metric, say {field.name}.last", err.column) from None
        raise
    return Term(field, node.op, checked if isinstance(node.value, tuple) else checked[0],
                node.column)


def _said(op: str) -> str:
    return {"has": "in", "not has": "not in"}.get(op, op)


def _checked(field: Field, node: Compare, value: Any) -> Any:
    """``value`` as the field compares it (a date as a time); a wrong kind is an error."""
    if value is None:
        if node.op in ("==", "!=", "in", "not in"):
            return None
        raise QueryError(f"None can only be compared with == or !=, not '{_said(node.op)}'",
                         node.column)
    kind = field.kind
    if node.op in ("has", "not has", "~") or kind in (TEXT, LIST):
        ok = isinstance(value, str)
    elif kind == NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == FLAG:
        ok = isinstance(value, bool)
    elif kind == TIME:
        return _time(value, node.column)
    else:  # ANY: a config value is whatever the config holds
        ok = True
    if not ok:
        raise QueryError(f"{field.name} is {HINTS[kind]}", node.column)
    return value


def _time(value: Any, column: int) -> datetime:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        raise QueryError(f"{value!r} is not a date: write it as \"2024-05-01\" or "
                         "\"2024-05-01 14:30\"", column)
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


# ---- Answering in Python


def _holds(node: Any, run: RunSummary, extras: Extras | None) -> bool:
    if isinstance(node, Term):
        return test(node.op, node.field.value(run, extras), node.value)
    if isinstance(node, Not):
        return not _holds(node.part, run, extras)
    if isinstance(node, All):
        return all(_holds(p, run, extras) for p in node.parts)
    return any(_holds(p, run, extras) for p in node.parts)


def test(op: str, have: Any, want: Any) -> bool:
    """Whether a run's value ``have`` passes ``op want`` (None is "missing": see the module)."""
    if op == "==":
        return _same(have, want)
    if op == "!=":
        return not _same(have, want)
    if op in ("in", "not in"):
        inside = any(_same(have, w) for w in want)
        return inside if op == "in" else not inside
    if op == "not has":
        return not test("has", have, want)
    if have is None:
        return False
    if op == "has":
        return want in have if isinstance(have, list) else want.lower() in str(have).lower()
    if op == "~":
        items = have if isinstance(have, list) else [have]
        return any(re.search(want, str(item), re.IGNORECASE) for item in items)
    return _ordered(op, have, want)


def _same(have: Any, want: Any) -> bool:
    if have is None or want is None:
        return have is want
    if isinstance(have, bool) != isinstance(want, bool):
        return False
    return have == want


def _ordered(op: str, have: Any, want: Any) -> bool:
    numbers = (int, float)
    comparable = (isinstance(have, numbers) and isinstance(want, numbers)
                  and not isinstance(have, bool) and not isinstance(want, bool)) or (
        type(have) is type(want))
    if not comparable:
        return False
    return ORDER[op](have, want)
