"""``headroom runs --where`` and ``--group-by``: which runs, and their aggregates by group."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracker.cli._output import fail, print_json, print_table

if TYPE_CHECKING:
    from tracker.model import RunSummary
    from tracker.store import Store

WHERE_HELP = ('keep the runs a query matches, e.g. \'method == "lora" and peak_gib > 40 and '
              'model ~ "llama"\'; fields are the keys of --json (shape fields, loss.last, '
              'peak_gib...) and config.KEY')
GROUP_HELP = ("group the runs by a field (method, lora_rank, config.KEY, tags) or by a pattern "
              "over a text field (name~-seed\\d+) and print each group's count and mean ± std")
# Columns of the grouped table: (summary field, header).
GROUP_COLUMNS = (("steps", "steps"), ("final_loss", "loss"), ("best_eval", "best eval"),
                 ("peak_gib", "peak GiB"), ("tokens_per_s", "tokens/s"))


def add_arguments(parser) -> None:
    parser.add_argument("--where", metavar="QUERY", help=WHERE_HELP)
    parser.add_argument("--group-by", metavar="FIELD", help=GROUP_HELP)


def selected_runs(store: Store, where: str | None,
                  live: Callable[[list[RunSummary]], object]) -> list[RunSummary]:
    """Every run, or those ``where`` matches (a malformed query fails in one line), with
    their status as ``live`` shows it (a silent running run is "crashed?")."""
    from core.query import QueryError
    from tracker import query

    if not where:
        runs = store.runs()
        live(runs)
        return runs
    try:
        compiled = query.compile(where, store_metrics(store))
    except QueryError as err:
        fail(f"--where: {err}")
    return query.select_runs(store, compiled, live)


def print_groups(store: Store, runs: list[RunSummary], text: str, as_json: bool) -> int:
    from core.query import QueryError
    from tracker import groups
    from tracker.db import query as sql

    try:
        by = groups.group_by(text, store_metrics(store))
    except QueryError as err:
        fail(f"--group-by: {err}")
    extras: dict[int, Any] = {}
    if by.needs_extras and runs:
        with store.session() as session:
            extras = sql.extras(session, [r.id for r in runs])
    found = groups.groups(runs, by, extras)
    if as_json:
        print_json([g.to_dict(text) for g in found])
        return 0
    rows = [(g.key, g.count, *(_mean_std(g.stats[k]) for k, _ in GROUP_COLUMNS)) for g in found]
    print_table((text, "runs", *(h for _, h in GROUP_COLUMNS)), rows)
    return 0


def store_metrics(store: Store) -> list[str]:
    """The metric names stored runs have (for suggestions when a field is misspelt)."""
    from tracker.db import series

    with store.session() as unit:
        return series.metric_names(unit)


def _mean_std(stat) -> str | None:
    if stat is None:
        return None
    mean = f"{stat.mean:.4g}"
    return mean if stat.std is None else f"{mean} ± {stat.std:.2g}"
