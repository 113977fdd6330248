"""A team-tracker connection as the dialog edits it, and the words the app says about databases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.team import CopyReport

DRIVER = "postgresql+psycopg"
DEFAULT_PORT = "5432"


@dataclass(frozen=True)
class Connection:
    """Where the team database is; the password is kept apart (keyring, or asked)."""

    host: str
    port: str = DEFAULT_PORT
    database: str = "headroom"
    user: str = ""

    @classmethod
    def from_settings(cls, fields: dict[str, str]) -> Connection | None:
        if not fields.get("host"):
            return None
        return cls(fields["host"], fields.get("port") or DEFAULT_PORT,
                   fields.get("database") or "headroom", fields.get("user", ""))

    def to_settings(self) -> dict[str, str]:
        return {"host": self.host, "port": self.port, "database": self.database, "user": self.user}

    @property
    def account(self) -> str:
        """The keyring entry's name: one password per user and server."""
        return f"{self.user}@{self.host}:{self.port}/{self.database}"

    def problem(self) -> str | None:
        """What is missing or wrong in the form, or None when it can be tried."""
        if not self.host.strip():
            return "Enter the server's host name (or a socket folder such as /var/run/postgresql)."
        if not self.port.isdigit() or not 0 < int(self.port) < 65536:
            return "The port is a number from 1 to 65535 (PostgreSQL's is 5432)."
        if not self.database.strip():
            return "Enter the database name."
        return None

    def url(self, password: str = "") -> str:
        """The database URL (a host that is a folder is a Unix socket)."""
        from tracker.db.engine import server_url

        return server_url(DRIVER, self.user, password, self.host, self.port, self.database)

def database_label(display_url: str) -> str:
    """The status bar's words for the database in use (its URL already has no password)."""
    if display_url.startswith("sqlite"):
        return f"Local database: {display_url.split(':///', 1)[-1]}"
    return f"Team tracker: {display_url}"


def copy_summary(verb: str, copied: int, already: int, where: str) -> str:
    """"Published 3 runs to …; 1 was already there"."""
    text = f"{verb} {copied} run{'s' * (copied != 1)} {where}"
    if already:
        text += f"; {already} {'was' if already == 1 else 'were'} already there"
    return text


def copy_report(verb: str, report: CopyReport, where: str) -> str:
    """The status bar's words for a copy, saying why it stopped early and what it left."""
    text = copy_summary(verb, len(report.copied), len(report.already_there), where)
    left = len(report.not_copied)
    if report.error:
        return (f"Stopped: {report.error}. {text} before that; the run being copied was not "
                f"half-stored; {left} not copied")
    if report.cancelled:
        return f"Cancelled: {text}; {left} not copied"
    return text
