"""A throwaway PostgreSQL server for the store tests, when the machine has one installed.

``HEADROOM_TEST_PG`` (a server URL whose user may create databases) wins; else
the Debian/Ubuntu server binaries are used to start a private cluster in a temp
folder, on a Unix socket only, stopped at the end of the session.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def _bin(name: str) -> str | None:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    return found


class TempCluster:
    """initdb + pg_ctl in a temp folder; run as the postgres user when we are root."""

    def __init__(self, tcp: bool = False) -> None:
        self.tcp = tcp  # also listen on 127.0.0.1 (the screenshots show a host, not a socket)
        self.dir = Path(tempfile.mkdtemp(prefix="headroom-pg-"))
        self.data = self.dir / "data"
        self.port = 5432 + (os.getpid() % 1000) + 1000
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.dir, "postgres")
            os.chmod(self.dir, 0o755)

    def start(self) -> str:
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "headroom", "--no-sync")
        listen = "127.0.0.1" if self.tcp else ""
        options = f"-p {self.port} -k {self.dir} -c listen_addresses='{listen}' -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"),
                  "-w", "start")
        if self.tcp:
            return f"postgresql+psycopg://headroom@127.0.0.1:{self.port}/postgres"
        return f"postgresql+psycopg://headroom@/postgres?host={self.dir}&port={self.port}"

    def stop(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self, *args, check: bool = True) -> None:
        subprocess.run([*self._as, *args], check=check, capture_output=True, cwd=self.dir)


def server_url() -> tuple[str | None, TempCluster | None]:
    """A server URL to create test databases on, and the cluster to stop (if we started one)."""
    url = os.environ.get("HEADROOM_TEST_PG")
    if url:
        return url, None
    if _bin("initdb") is None or _bin("pg_ctl") is None:
        return None, None
    cluster = TempCluster()
    try:
        return cluster.start(), cluster
    except (subprocess.CalledProcessError, OSError):
        cluster.stop()
        return None, None


def fresh_database(server: str) -> str:
    """Create an empty database on ``server`` and return its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"headroom_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)
