"""What goes wrong in the database, in the tracker's words rather than the driver's.

Callers outside ``tracker/db`` catch these, never SQLAlchemy's: a unit of work
and opening a store translate the driver's errors on the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError


class StorageError(RuntimeError):
    """The database refused or lost a unit of work, so none of it was stored.

    ``str()`` is the driver's first line; ``connection_lost`` is True when the
    connection broke (a server that went away), not a statement that failed.
    """

    def __init__(self, reason: str, connection_lost: bool = False) -> None:
        super().__init__(reason)
        self.connection_lost = connection_lost


class AlreadyStored(StorageError):
    """Another writer stored the same row meanwhile (a unique key such as a run's content)."""


def reason(err: DBAPIError) -> str:
    """The driver's first line (``connection failed: … password authentication failed …``)."""
    text = str(err.orig).strip() if err.orig is not None else ""
    return text.splitlines()[0] if text else type(err).__name__


@contextmanager
def translated() -> Iterator[None]:
    """Raise the driver's errors in the block as :class:`StorageError` (or AlreadyStored)."""
    try:
        yield
    except IntegrityError as err:
        raise AlreadyStored(reason(err)) from err
    except DBAPIError as err:
        raise StorageError(reason(err), bool(err.connection_invalidated)) from err
