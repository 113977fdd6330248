"""Where the database is, how to connect to it, and keeping its schema current.

The default is an SQLite file in the user data directory, in WAL mode so a
reader never waits for an ingest and a killed process leaves it consistent.
``--db URL`` or ``HEADROOM_DB`` point the same code at another file or server.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # SQLAlchemy loads with the engine: finding the URL needs none of it
    from sqlalchemy import Engine

# Alembic's own "package:folder" form, found through importlib.resources once installed.
MIGRATIONS = "tracker.db:migrations"
# `revision = "0002"` or `down_revision: str | None = "0001"` in a revision file.
_REVISION_LINE = re.compile(r"^(revision|down_revision)\b[^=\n]*=\s*(.+?)\s*$", re.MULTILINE)
CONNECT_TIMEOUT_S = 10


class SchemaError(RuntimeError):
    """The database cannot be used by this version of Headroom."""


def data_dir() -> Path:
    """Headroom's data directory: ``HEADROOM_HOME`` or the platform's user data dir."""
    home = os.environ.get("HEADROOM_HOME")
    if home:
        return Path(home)
    import platformdirs

    return Path(platformdirs.user_data_dir("headroom", appauthor=False))


def default_url() -> str:
    """``HEADROOM_DB`` if set, else the SQLite file in :func:`data_dir`."""
    env = os.environ.get("HEADROOM_DB")
    if env:
        return normalize_url(env)
    return normalize_url(str(data_dir() / "headroom.db"))


def normalize_url(url_or_path: str) -> str:
    """Accept a database URL or a plain file path (taken as SQLite)."""
    if "://" in url_or_path:
        return url_or_path
    return f"sqlite:///{Path(url_or_path).expanduser().resolve()}"


def display_url(url: str) -> str:
    """The URL with any password hidden, for status bars and messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def make_engine(url: str) -> Engine:
    """An engine with SQLite tuned for a desktop app (foreign keys, busy wait); WAL is
    switched on once by :func:`open_engine`."""
    from sqlalchemy import create_engine, event

    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # A server that does not answer fails in seconds, not after the system's TCP timeout.
    connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.startswith("postgresql") else {}
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args)


def open_engine(url: str) -> Engine:
    """An engine on ``url`` with its schema created or upgraded: SchemaError for a schema a
    newer Headroom wrote, StorageError (the driver's first line) when it cannot be reached."""
    from tracker.db.errors import translated

    with translated():
        engine = make_engine(url)
        _use_wal(engine)
        upgrade(engine)
    return engine


def survey(url: str) -> tuple[str, int | None]:
    """What opening ``url`` would find, changing nothing: its :func:`schema_state` and, when it
    has current or older tables, how many runs they hold. StorageError when it cannot be reached."""
    from sqlalchemy import func, select

    from tracker.db.errors import translated
    from tracker.db.schema import Run

    engine = make_engine(url)
    try:
        with translated():
            state = schema_state(engine)
            if state in ("empty", "newer"):
                return state, None
            with engine.connect() as conn:
                return state, conn.execute(select(func.count(Run.id))).scalar_one()
    finally:
        engine.dispose()


def server_url(driver: str, user: str, password: str, host: str, port: str, database: str) -> str:
    """A server's URL with its password; a host that is a folder is a Unix socket, passed as a
    query (a socket has no port of its own)."""
    from sqlalchemy.engine import URL

    socket = host.startswith("/")
    url = URL.create(
        driver, username=user or None, password=password or None,
        host=None if socket else host.strip(), port=None if socket else int(port),
        database=database.strip(), query={"host": host, "port": port} if socket else {},
    )
    return url.render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _use_wal(engine: Engine) -> None:
    """Put an SQLite file in WAL mode (it stays so), one process at a time.

    Two processes switching a brand-new file at once deadlock inside SQLite, which then
    answers one of them "database is locked" at once instead of waiting its busy timeout.
    """
    if not _on_disk(engine):
        return
    with engine.connect() as conn:
        if conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal":
            return
    with _migration_lock(engine), engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")


def _on_disk(engine: Engine) -> bool:
    """An SQLite file, not an in-memory database: it keeps a journal mode and gets a lock file."""
    return engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:")


def _alembic_config(engine: Engine):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    config.attributes["engine"] = engine
    return config


def current_revision(engine: Engine) -> str | None:
    """The schema revision stamped in the database, or None for an empty one."""
    from sqlalchemy import inspect, text

    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def head_revision() -> str | None:
    """The newest revision of ``migrations/versions``, read without Alembic.

    Importing Alembic costs about 0.2 s, paid at every start only to learn that the
    schema is current. None when the files do not show one head: then Alembic decides.
    """
    revisions, parents = set(), set()
    for path in (resources.files("tracker.db") / "migrations" / "versions").iterdir():
        if not path.name.endswith(".py"):
            continue
        found = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
        try:
            revision, down = (ast.literal_eval(found[k]) for k in ("revision", "down_revision"))
        except (KeyError, ValueError, SyntaxError):
            return None
        revisions.add(revision)
        parents.update(down if isinstance(down, tuple) else (down,))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def schema_state(engine: Engine) -> str:
    """"empty", "current", "older" (upgraded on open) or "newer" (written by a newer Headroom)."""
    current = current_revision(engine)
    if current is None:
        return "empty"
    if current == head_revision():
        return "current"
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config(engine))
    if current == script.get_current_head():
        return "current"
    return "older" if current in {rev.revision for rev in script.walk_revisions()} else "newer"


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision this code knows.

    Raises SchemaError when the database was written by a newer Headroom,
    rather than touching a schema it does not understand. Migrations run one
    process at a time: two processes opening a brand-new database at once
    would both create its tables ("table run already exists").
    """
    if schema_state(engine) == "current":
        return
    from alembic import command

    with _migration_lock(engine):
        state = schema_state(engine)  # another process may have migrated it meanwhile
        if state == "current":
            return
        if state == "newer":
            raise SchemaError(
                f"the database schema ({current_revision(engine)}) is newer than this Headroom "
                "understands; upgrade Headroom to open it"
            )
        command.upgrade(_alembic_config(engine), "head")


# Any fixed number: the key of the PostgreSQL advisory lock that serialises migrations.
_PG_LOCK_KEY = 0x4845414452  # "HEADR"


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """An exclusive lock across processes: a lock file beside an SQLite database, an advisory
    lock on a server; none where neither applies (a read-only folder, an in-memory database)."""
    with ExitStack() as stack:
        if _on_disk(engine):
            _lock_file(stack, Path(f"{engine.url.database}-migrate.lock"))
        elif engine.dialect.name == "postgresql":
            from sqlalchemy import text

            conn = stack.enter_context(engine.connect())
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_LOCK_KEY})
            stack.callback(conn.commit)
            stack.callback(conn.execute, text("SELECT pg_advisory_unlock(:key)"),
                           {"key": _PG_LOCK_KEY})
        yield


def _lock_file(stack: ExitStack, path: Path) -> None:
    try:
        import fcntl

        handle = stack.enter_context(open(path, "a"))  # noqa: SIM115 (closed by the stack)
    except (ImportError, OSError):  # no flock here, or a folder we may not write to
        return
    fcntl.flock(handle, fcntl.LOCK_EX)
    stack.callback(fcntl.flock, handle, fcntl.LOCK_UN)
