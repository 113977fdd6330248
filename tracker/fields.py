"""What a run can be filtered, grouped and plotted by: its fields, by the names queries use.

The names are the keys of ``headroom runs --json``: ``name``, ``format``,
``status``, ``tags``, ``severity``, the shape's fields (``method``,
``seq_len``; also ``shape.seq_len``), metric summaries (``loss.last``,
``metrics["eval/acc"].max``), ``config.<key>`` (the run's config, nested
keys dotted) and short aliases for what the runs table shows (``peak_gib``,
``final_loss``, ``best_eval``...). A :class:`Field` says the kind of value
(which operators make sense) and where the value lives, so that
:mod:`tracker.db.query` can ask SQL for it and :meth:`Field.value` can read
it from a :class:`RunSummary` the app already holds, with the same answer.
"""

from __future__ import annotations

import difflib
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from core.metrics import MEMORY_COUNTERS
from core.query import Compare, QueryError, Ref, parse
from core.shape import RunShape
from tracker.model import RunSummary

TEXT, NUMBER, FLAG, LIST, TIME, ANY = "text", "number", "flag", "list", "time", "any"
# Series summaries a query can name after a metric (``loss.last``).
STATS = ("last", "min", "max", "count", "first_step", "last_step", "first_nonfinite_step")
# Memory metrics in the order the peak prefers them (allocated is what the calibration fits).
MEMORY_METRICS = tuple(MEMORY_COUNTERS)
# Summary figures stated once per run that give its duration, in seconds.
RUNTIME_KEYS = ("train_runtime", "elapsed_s")

Extras = Mapping[str, Any]  # a run's "config" and "summary", loaded only when a field needs them


@dataclass(frozen=True)
class Field:
    """One thing a run can be asked about: its name, kind and where its value lives.

    ``source`` is ``("column", attr)``, ``("tags",)``, ``("severity",)``,
    ``("shape", name)``, ``("metric", metric, stat)``, ``("peak",)``,
    ``("steps",)``, ``("config", *keys)`` or ``("gpu_hours",)``.
    """

    name: str
    kind: str
    source: tuple[str, ...]
    doc: str = ""

    @property
    def needs_extras(self) -> bool:
        """True when the value is in the run's config or summary, not its table row."""
        return self.source[0] in ("config", "gpu_hours")

    def value(self, run: RunSummary, extras: Extras | None = None) -> Any:
        return _READERS[self.source[0]](run, self.source[1:], extras or {})


COLUMNS: dict[str, tuple[str, str]] = {  # query name -> kind, what it is
    "id": (NUMBER, "the run's id"),
    "name": (TEXT, "the run's name"),
    "format": (TEXT, "the log format it was read from"),
    "source_path": (TEXT, "where the run was read from"),
    "notes": (TEXT, "the user's notes"),
    "started_at": (TIME, "when the run started (compare with a date: \"2024-05-01\")"),
}
ALIASES: dict[str, tuple[tuple[str, ...], str]] = {
    "peak_gib": (("peak",), "peak device memory: allocated, else reserved, else driver-seen"),
    "steps": (("steps",), "the last step any metric reached"),
    "final_loss": (("metric", "loss", "last"), "the last training loss"),
    "min_loss": (("metric", "loss", "min"), "the lowest training loss"),
    "best_eval": (("metric", "eval_loss", "min"), "the lowest evaluation loss"),
    "tokens_per_s": (("metric", "tokens_per_s", "last"), "throughput at the last step"),
    "mfu": (("metric", "mfu", "last"), "model FLOPs utilisation at the last step"),
    "gpu_hours": (("gpu_hours",), "run time x GPUs, from the run's stated runtime"),
}


def resolve(ref: Ref, metrics: Iterable[str] = ()) -> Field:
    """The field ``ref`` names (raises :class:`QueryError` at its column)."""
    path = ref.path
    head = path[0]
    if head == "config" and len(path) > 1:
        return Field(ref.text, ANY, ("config", *path[1:]), "a key of the run's config")
    if head == "shape" and len(path) == 2:
        return _shape_field(path[1], ref)
    if head == "metrics" and len(path) == 3:
        return _metric_field(path[1], path[2], ref)
    if len(path) == 2 and head not in ("shape", "metrics", "config"):
        return _metric_field(head, path[1], ref)
    if len(path) == 1:
        found = _named(head)
        if found is not None:
            return found
        if head in metrics:
            raise QueryError(f"{head} is a metric: say {head}.last, {head}.min or {head}.max",
                             ref.column)
    raise QueryError(f"no field '{ref.text}'{_suggest(ref.text, metrics)}", ref.column)


def named(text: str, metrics: Iterable[str] = ()) -> Field:
    """The one field ``text`` names, as the group-by and axis boxes take it."""
    node = parse(text) if text.strip() else None
    if not isinstance(node, Compare) or node.op != "==" or node.value is not True:
        raise QueryError("name one field, e.g. method, lora_rank, loss.last or config.KEY", 1)
    return resolve(node.ref, metrics)


def _named(name: str) -> Field | None:
    if name in COLUMNS:
        kind, doc = COLUMNS[name]
        return Field(name, kind, ("column", name), doc)
    if name == "status":
        return Field(name, TEXT, ("status",), "finished, crashed, running, crashed? or unknown")
    if name == "tags":
        return Field(name, LIST, ("tags",), "the run's tags")
    if name == "severity":
        return Field(name, TEXT, ("severity",), "the worst finding: critical, warning, info")
    if name in ALIASES:
        source, doc = ALIASES[name]
        return Field(name, NUMBER, source, doc)
    if name in shape_kinds():
        return Field(name, shape_kinds()[name], ("shape", name), "a field of the run's shape")
    return None


def _shape_field(name: str, ref: Ref) -> Field:
    if name not in shape_kinds():
        raise QueryError(f"the shape has no field '{name}'{_suggest(name, ())}", ref.column)
    return Field(ref.text, shape_kinds()[name], ("shape", name), "a field of the run's shape")


def _metric_field(metric: str, stat: str, ref: Ref) -> Field:
    if stat not in STATS:
        raise QueryError(f"a metric's summaries are {', '.join(STATS)}, not '{stat}'", ref.column)
    return Field(ref.text, NUMBER, ("metric", metric, stat), f"{stat} of the metric {metric}")


@cache
def shape_kinds() -> dict[str, str]:
    """Each shape field's kind, from the dataclass's annotations."""
    hints = typing.get_type_hints(RunShape)
    return {name: _kind(hints[name]) for name in RunShape.field_names()}


def _kind(hint: Any) -> str:
    types = {t for t in typing.get_args(hint) if t is not type(None)} or {hint}
    if bool in types:
        return FLAG
    if types & {int, float}:
        return NUMBER
    if any(typing.get_origin(t) is list for t in types):
        return LIST
    return TEXT


def names(metrics: Iterable[str] = ()) -> list[str]:
    """Every field name a query can use, for completion: ``metrics`` adds their summaries."""
    out = [*COLUMNS, "status", "tags", "severity", *ALIASES, *shape_kinds()]
    for metric in sorted(set(metrics)):
        base = metric if metric.isidentifier() else f'metrics["{metric}"]'
        out += [f"{base}.{stat}" for stat in ("last", "min", "max")]
    return out


def _suggest(name: str, metrics: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, names(metrics), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


# ---- Reading a field's value from a run


def summary_values(run: RunSummary) -> dict[str, Any]:
    """The short aliases a run's table row answers (``peak_gib``, ``final_loss``...)."""
    return {name: Field(name, NUMBER, source).value(run) for name, (source, _doc) in ALIASES.items()
            if not Field(name, NUMBER, source).needs_extras}


def peak_gib(run: RunSummary) -> float | None:
    """The run's memory peak in GiB: allocated if logged, else reserved, else driver-seen."""
    for metric in MEMORY_METRICS:
        peak = run.stat(metric, "max")
        if peak is not None:
            return peak
    return None


def last_step(run: RunSummary) -> int | None:
    """The last step any metric of the run reached."""
    return max((s.last_step for s in run.series.values() if s.last_step is not None), default=None)


def gpu_hours(run: RunSummary, summary: Mapping[str, Any]) -> float | None:
    """The run's stated runtime times its GPUs (one when the shape does not say)."""
    for key in RUNTIME_KEYS:
        seconds = summary.get(key)
        if isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0:
            return seconds / 3600 * (run.shape.n_gpus or 1)
    return None


def config_value(config: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """``config[k1][k2]...``, else the flat key ``"k1.k2"`` some readers store."""
    node: Any = config
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            node = config.get(".".join(keys)) if len(keys) > 1 else None
            break
        node = node[key]
    return node if isinstance(node, (str, int, float, bool)) or node is None else str(node)


def _column(run: RunSummary, rest: tuple[str, ...], _extras: Extras) -> Any:
    value = getattr(run, rest[0])
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # the store keeps UTC; some back-ends drop the zone
    return value


_READERS: dict[str, Callable[[RunSummary, tuple[str, ...], Extras], Any]] = {
    "column": _column,
    "status": lambda run, _rest, _extras: str(run.status),
    "tags": lambda run, _rest, _extras: list(run.tags),
    "severity": lambda run, _rest, _extras: run.severity,
    "shape": lambda run, rest, _extras: getattr(run.shape, rest[0]),
    "metric": lambda run, rest, _extras: run.stat(rest[0], rest[1]),
    "peak": lambda run, _rest, _extras: peak_gib(run),
    "steps": lambda run, _rest, _extras: last_step(run),
    "config": lambda _run, rest, extras: config_value(extras.get("config") or {}, rest),
    "gpu_hours": lambda run, _rest, extras: gpu_hours(run, extras.get("summary") or {}),
}
