"""The machinery every console dialect shares: rules, sniffing, one pass over the lines.

A dialect is a table of :class:`Rule` rows: a cheap substring (``needle``)
tested before the compiled regex, and a handler that turns the match into
points, events or facts. The first rule whose handler takes a line wins (a
handler returns False to pass the line on). Blocks that span lines (argument
dumps, config JSON) are read by a collector a handler installs in
:attr:`Context.collect`, which sees every following line first until it lets
go. :meth:`Dialect.read_runs` streams the cleaned lines of a file through the
table once. Lines no rule took are searched for crash evidence; an event is
placed at the last step logged before it (None when no step was logged yet,
which is how an OOM at start-up shows).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.runlog import RunEvent, RunLog
from tracker.readers._common import ReaderError, file_run_name, head, looks_binary
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers.crash import CrashScanner
from tracker.readers.text._lines import Line, lines
from tracker.readers.text._runs import RunsBuilder
from tracker.readers.text._values import stamp_time

# A wrapped record is joined with at most this many following lines.
MAX_JOINS = 4
# Terminal copies sometimes pad a wrapped word with spaces ("MemA          llocated").
_PADDING = re.compile(r"(?<=\w) {2,}(?=\w)")


@dataclass(frozen=True)
class Rule:
    """One kind of line: found by ``needle`` then ``pattern``, handled by ``handle``."""

    needle: str
    pattern: re.Pattern[str]
    handle: Callable[[re.Match[str], Context], bool | None]
    done: Callable[[str], bool] | None = None  # true of a complete line; else the line was wrapped
    any_rank: bool = False  # per-rank reports: every rank's copy counts


class Context:
    """What handlers write to, and the line being handled."""

    def __init__(self, runs: RunsBuilder) -> None:
        self.runs = runs
        self.state: dict[str, Any] = {}
        self.line = Line("")
        # Reads the lines of a multi-line block; returns False for lines not its own.
        self.collect: Callable[[Line], bool] | None = None

    @property
    def run(self) -> RunLog:
        return self.runs.run

    def wall(self) -> float | None:
        """Wall time from the current line's logger timestamp, if it had one."""
        return stamp_time(self.line.stamp)


@dataclass(frozen=True)
class Dialect:
    """A console-log format: how to recognise it, and its table of rules."""

    name: str
    framework: str
    rules: tuple[Rule, ...]
    signatures: tuple[tuple[re.Pattern[str], float], ...]
    finish: Callable[[Context], None] | None = None  # after the last line

    def sniff(self, sample: Sample) -> float:
        """The best confidence among the signatures found in the file's head and tail."""
        texts = sample.lines
        best = Confidence.NONE
        for pattern, confidence in self.signatures:
            if confidence > best and any(pattern.search(text) for text in texts):
                best = confidence
        return best

    def read_runs(self, path: Path) -> list[RunLog]:
        """Every run the log holds (usually one; restarts from scratch make more)."""
        if looks_binary(head(path, 4096)):
            raise ReaderError("binary data, not a text log")
        ctx = Context(RunsBuilder(self.name, file_run_name(path)))
        _Pass(self, ctx).run(path)
        if self.finish is not None:
            self.finish(ctx)
        runs = ctx.runs.finish()
        if not runs:
            raise ReaderError(f"no {self.framework} training steps or errors found in this log")
        for run in runs:
            run.shape.set("framework", self.framework, "log", overwrite=False)
        return runs


class _Pass:
    """One streaming pass of a dialect's rules over a file."""

    def __init__(self, dialect: Dialect, ctx: Context) -> None:
        self.rules = dialect.rules
        self.wrappable = tuple(rule for rule in dialect.rules if rule.done is not None)
        self.ctx = ctx
        self.crash = CrashScanner()
        self.owners: dict[int, str | None] = {}

    def run(self, path: Path) -> None:
        held: Line | None = None
        joins = 0
        for line in lines(path):
            if held is not None:
                if self._continues(held, line):
                    line = held._replace(text=held.text + line.text.lstrip())
                else:
                    self._handle(held, final=True)
                    joins = 0
                held = None
            if self._handle(line, final=joins >= MAX_JOINS):
                held, joins = line, joins + 1
            else:
                joins = 0
        if held is not None:
            self._handle(held, final=True)
        for event in self.crash.flush():
            self._crash(event)

    def _continues(self, held: Line, line: Line) -> bool:
        """A wrapped line goes on without a logger header and without starting a record."""
        start = line.text.lstrip()[:9]
        return (line.label == held.label and line.stamp is None
                and not start.startswith(("[", "Traceback"))
                and not any(rule.needle in line.text and rule.pattern.search(line.text)
                            for rule in self.wrappable))

    def _handle(self, line: Line, final: bool) -> bool:
        """Apply the first rule that takes the line; True when it looks wrapped and needs the next.

        Lines a rule took are records (metrics, settings), not crash messages,
        so only the others are searched for crash evidence, unless the scanner
        is in the middle of a wrapped message.
        """
        ctx, text = self.ctx, line.text
        ctx.line = line
        taken = ctx.collect is not None and ctx.collect(line)
        if not taken:
            taken = self._apply_rules(line, final)
            if taken is None:
                return True
        if not taken or self.crash.holding:
            for event in self.crash.feed(text):
                self._crash(event)
        return False

    def _apply_rules(self, line: Line, final: bool) -> bool | None:
        """True when a rule took the line; None when it is the start of a wrapped record."""
        text = line.text
        for index, rule in enumerate(self.rules):
            if rule.needle not in text:
                continue
            match = rule.pattern.search(text)
            if match is None:
                continue
            if rule.done is not None and not rule.done(text):
                unpadded = _PADDING.sub("", text)
                if rule.done(unpadded):
                    match = rule.pattern.search(unpadded) or match
                elif not final:
                    return None  # the start of a record whose end is on the next line
            if not self._owned(index, rule, line.label):
                return True  # another rank's copy
            if rule.handle(match, self.ctx) is not False:
                return True
        return False

    def _owned(self, index: int, rule: Rule, label: str | None) -> bool:
        """Each kind of line is taken from the first rank that printed it (others repeat it)."""
        if rule.any_rank or label is None:
            return True
        owner = self.owners.setdefault(index, label)
        return owner == label

    def _crash(self, event: RunEvent) -> None:
        data = event.data
        step = data.get("iteration") if event.kind == "nan" else None
        key = (data.get("gpu"), data.get("tried_gib")) if event.kind == "oom" else data.get("type")
        self.ctx.runs.event(event.kind, event.message, data, step=step, wall=self.ctx.wall(),
                            key=key if key is not None else event.message)
