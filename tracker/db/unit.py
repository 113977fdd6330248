"""One unit of work on the database: the transaction every :mod:`tracker.db` function runs in.

Code outside ``tracker/db`` opens one (``Store.session()``) and hands it to these
functions; it never sees the ORM session inside, so the tables, the queries and
the SQL stay here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from tracker.db.errors import translated

if TYPE_CHECKING:
    from sqlalchemy import Engine


class Unit:
    """An open transaction: its work commits when the block that opened it ends without error."""

    __slots__ = ("session",)

    def __init__(self, session: Session) -> None:
        self.session = session

    @property
    def dialect(self) -> str:
        """"sqlite", "postgresql"...: what the SQL built for this database must speak."""
        return self.session.get_bind().dialect.name


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Unit]:
    """A unit whose work commits on success and rolls back on any error; the driver's errors
    come out as :class:`~tracker.db.errors.StorageError`."""
    with translated(), Session(engine, expire_on_commit=False) as session, session.begin():
        yield Unit(session)
