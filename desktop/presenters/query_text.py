"""The filter box's text: words or a query, the word being typed, and completing it.

Text with an operator (``==``, ``>``, ``~``, ``in``, ``and``...) is a query
(:mod:`tracker.query`); anything else is the word filter the box always had.
Completion works on the field name under the cursor, so a long query can be
written a field at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tracker import fields
from tracker.query import Query, compile

__all__ = ["Query", "complete", "field_names", "is_query", "parse", "word_at"]

QUERY_SIGNS = re.compile(r"==|!=|<|>|~|\b(?:in|and|or|not)\b")
# A field name as typed: dotted words.
_WORD = re.compile(r"[A-Za-z_][\w.]*$")


def is_query(text: str) -> bool:
    """Whether the filter box holds a query rather than words to look for."""
    return bool(QUERY_SIGNS.search(_without_strings(text)))


def parse(text: str, metrics: Iterable[str]) -> Query:
    """The query in the box, with these runs' metrics as fields (raises QueryError)."""
    return compile(text, list(metrics))


def field_names(metrics: Iterable[str] = ()) -> list[str]:
    """Every field a query may name, these metrics' summaries among them, for completion."""
    return fields.names(list(metrics))


def _without_strings(text: str) -> str:
    return re.sub(r"\"[^\"]*\"?|'[^']*'?", '""', text)


def word_at(text: str, cursor: int) -> tuple[int, str]:
    """(start, word) of the field name ending at ``cursor`` ("" when none is being typed)."""
    before = text[:cursor]
    if before.count('"') % 2 or before.count("'") % 2:
        return cursor, ""  # inside a string: a value, not a field
    found = _WORD.search(before)
    if found is None or (found.start() and before[found.start() - 1].isalnum()):
        return cursor, ""
    return found.start(), found.group()


def complete(text: str, cursor: int, completion: str) -> tuple[str, int]:
    """``text`` with the word at ``cursor`` replaced by ``completion``; the new cursor."""
    start, _word = word_at(text, cursor)
    new = text[:start] + completion + text[cursor:]
    return new, start + len(completion)
