"""Alerts on watched runs: what counts as news, which folders want which, and where it goes.

A :class:`Watcher` is shown the runs of the watched folders after every look
and says what changed since the previous look: a run finished, crashed (an
OOM, an exception, a failed exit), gained a critical finding (NaN loss, OOM;
also a loss spike or a throughput drop), or went quiet (it was seen growing,
then brought nothing new for ``quiet_after_s`` without recording an end).
The first look only learns what is there: old news is not news.

:class:`AlertConfig` is one small TOML file in Headroom's data folder, which
both ``headroom watch`` and the app read::

    on_alert = "notify-send Headroom {message}"
    webhook = "https://hooks.example.com/T000/B000"
    quiet_minutes = 10
    [folders."/data/runs"]
    kinds = ["crashed", "finding"]

``on_alert`` is split like a shell line but never run by a shell: each
argument has ``{kind}``, ``{run}``, ``{run_id}``, ``{message}`` and ``{folder}``
replaced, so a run's name cannot inject a command; the same values are in
``HEADROOM_ALERT_*`` environment variables. ``webhook`` receives a JSON POST
whose ``text`` field Slack, Mattermost and Discord-compatible hooks show.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.diagnostics.finding import CRITICAL
from tracker.db.engine import data_dir
from tracker.model import RunSummary

KINDS: dict[str, str] = {
    "finished": "a run finished",
    "crashed": "a run crashed (out of memory, an exception, a failed exit)",
    "finding": "a critical finding: NaN loss, out of memory, a loss spike, a throughput drop",
    "quiet": "a running run went quiet",
}
# Findings that alert although they are warnings: the loss spike and throughput drop.
ALERTING_WARNINGS = frozenset({"loss_spike", "throughput_drop"})
ENDED = ("finished", "crashed")
HOOK_TIMEOUT_S = 10.0
QUIET_MINUTES = 10.0


class AlertConfigError(ValueError):
    """The alerts file cannot be read; the message says where."""


@dataclass(frozen=True)
class Alert:
    kind: str
    run_id: int
    run: str
    message: str
    folder: str = ""

    def line(self) -> str:
        return f"{self.kind}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_id": self.run_id, "run": self.run,
                "message": self.message, "folder": self.folder}


@dataclass
class _Seen:
    status: str
    last_data_at: datetime | None
    severity: str | None
    findings: frozenset[str] = frozenset()
    grew: bool = False  # new points arrived while watched
    told_quiet: bool = False


class Watcher:
    """Remembers each watched run between looks; :meth:`update` returns the news."""

    def __init__(self, quiet_after_s: float = QUIET_MINUTES * 60) -> None:
        self.quiet_after_s = quiet_after_s
        self._seen: dict[int, _Seen] = {}
        self._started = False

    def update(self, runs: Iterable[RunSummary], findings: Callable[[int], list],
               now: datetime | None = None) -> list[Alert]:
        """Alerts for what changed since the last call (none the first time).

        ``findings(run_id)`` gives a run's findings (objects with ``kind``,
        ``severity`` and ``message``); it is asked only about runs that changed.
        """
        now = now or datetime.now(UTC)
        alerts: list[Alert] = []
        for run in runs:
            before = self._seen.get(run.id)
            changed = before is None or (before.status, before.last_data_at, before.severity) != (
                run.status, run.last_data_at, run.severity)
            found = _alerting(findings(run.id)) if changed else {}
            seen = _Seen(run.status, run.last_data_at, run.severity,
                         frozenset(found) if changed else before.findings)
            if before is not None:
                seen.grew = before.grew or run.last_data_at != before.last_data_at
                seen.told_quiet = before.told_quiet and run.last_data_at == before.last_data_at
            if self._started:
                alerts += _news(run, before, seen, found)
                alerts += self._quiet(run, seen, now)
            self._seen[run.id] = seen
        self._started = True
        return alerts

    def _quiet(self, run: RunSummary, seen: _Seen, now: datetime) -> list[Alert]:
        if (seen.told_quiet or not seen.grew or run.status in ENDED
                or run.last_data_at is None):
            return []
        silent = (now - _aware(run.last_data_at)).total_seconds()
        if silent < self.quiet_after_s:
            return []
        seen.told_quiet = True
        return [Alert("quiet", run.id, run.name,
                      f"{run.name} went quiet: no new points for {_duration(silent)}")]


def _news(run: RunSummary, before: _Seen | None, seen: _Seen,
          found: dict[str, str]) -> list[Alert]:
    out = []
    was = before.status if before else None
    if run.status != was and run.status in ENDED:
        out.append(Alert(run.status, run.id, run.name, f"{run.name} {run.status}{_at(run)}"))
    old = before.findings if before else frozenset()
    for kind in sorted(seen.findings - old):
        out.append(Alert("finding", run.id, run.name, f"{run.name}: {found[kind]}"))
    return out


def _alerting(findings: list) -> dict[str, str]:
    """Kind -> message of the findings that alert."""
    return {f.kind: f.message for f in findings
            if f.severity == CRITICAL or f.kind in ALERTING_WARNINGS}


def _at(run: RunSummary) -> str:
    steps = [s.last_step for s in run.series.values() if s.last_step is not None]
    loss = run.stat("loss", "last")
    where = f" at step {max(steps):,}" if steps else ""
    return where + (f" (loss {loss:.4g})" if loss is not None else "")


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


# ---- Configuration


@dataclass
class AlertConfig:
    on_alert: str = ""
    webhook: str = ""
    quiet_minutes: float = QUIET_MINUTES
    folders: dict[str, list[str]] = field(default_factory=dict)  # folder -> kinds it wants

    def kinds_for(self, path: str) -> set[str]:
        """The kinds wanted for a run at ``path``: its most specific folder's, else all."""
        matching = [f for f in self.folders if within(path, f)]
        if not matching:
            return set(KINDS)
        return set(self.folders[max(matching, key=len)])

    def folder_of(self, path: str, folders: Iterable[str]) -> str:
        return max((f for f in folders if within(path, f)), key=len, default="")


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it."""
    return Path(path).is_relative_to(folder)


def config_path() -> Path:
    return data_dir() / "alerts.toml"


def load(path: Path | None = None) -> AlertConfig:
    """The alerts file (defaults when there is none); raises :class:`AlertConfigError`."""
    path = path or config_path()
    if not path.is_file():
        return AlertConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise AlertConfigError(f"{path}: {err}") from None
    folders = data.get("folders", {})
    try:
        return AlertConfig(
            on_alert=str(data.get("on_alert", "")), webhook=str(data.get("webhook", "")),
            quiet_minutes=float(data.get("quiet_minutes", QUIET_MINUTES)),
            folders={str(f): _kinds(v.get("kinds", list(KINDS)), f) for f, v in folders.items()})
    except (AttributeError, TypeError, ValueError) as err:
        raise AlertConfigError(f"{path}: {err}") from None


def _kinds(kinds: Any, folder: str) -> list[str]:
    unknown = [k for k in kinds if k not in KINDS]
    if not isinstance(kinds, list) or unknown:
        raise ValueError(f"folder {folder}: kinds must be a list of {', '.join(KINDS)}")
    return list(kinds)


def save(config: AlertConfig, path: Path | None = None) -> None:
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"on_alert = {_toml(config.on_alert)}", f"webhook = {_toml(config.webhook)}",
             f"quiet_minutes = {float(config.quiet_minutes)!r}"]
    for folder, kinds in sorted(config.folders.items()):
        lines += ["", f"[folders.{_toml(folder)}]",
                  f"kinds = [{', '.join(_toml(k) for k in kinds)}]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, but for DEL)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


# ---- Forwarding


def forward(alert: Alert, config: AlertConfig) -> list[str]:
    """Run the command hook and post to the webhook; returns one line per failure."""
    errors = []
    if config.on_alert.strip():
        errors += _run_hook(alert, config.on_alert)
    if config.webhook.strip():
        errors += _post(alert, config.webhook.strip())
    return errors


def _run_hook(alert: Alert, command: str) -> list[str]:
    values = {k: str(v) for k, v in alert.to_dict().items()}
    try:
        argv = [part.format_map(_Missing(values)) for part in shlex.split(command)]
    except ValueError as err:
        return [f"on_alert: {err}"]
    env = {**os.environ, **{f"HEADROOM_ALERT_{k.upper()}": v for k, v in values.items()}}
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=HOOK_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return [f"on_alert: {argv[0] if argv else command}: {err}"]
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return [f"on_alert: {argv[0]} exited with {done.returncode}"
                + (f": {said[-1]}" if said else "")]
    return []


class _Missing(dict):
    """``str.format_map`` that leaves unknown ``{names}`` as they are."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _post(alert: Alert, url: str) -> list[str]:
    from urllib.error import URLError
    from urllib.request import Request, urlopen

    if not url.startswith(("https://", "http://")):
        return [f"webhook: {url[:60]} is not an http(s) URL"]
    body = json.dumps({"text": f"Headroom — {alert.line()}", **alert.to_dict()}).encode()
    request = Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urlopen(request, timeout=HOOK_TIMEOUT_S) as answer:  # noqa: S310 (scheme checked)
            answer.read(1024)
    except (URLError, OSError, ValueError) as err:
        return [f"webhook: {getattr(err, 'reason', err)}"]
    return []
