"""Hand-rolled console logs: ``key: value`` and ``key=value`` pairs under a step or epoch marker.

Many scripts print their own lines (``Epoch 3/20`` then ``Train Loss: 6.21 - Valid
Loss: 6.02``, or ``step 120 | loss=2.31 lr=3e-4``). Guild AI's output scalars
showed that a generic reader of such pairs is worth having as the last resort:
its confidence stays below every dialect with a format of its own. A line
that names a step, iteration or epoch sets the step for the pairs on it and
after it (the first kind met, steps or epochs, counts; the other is a metric);
tqdm progress lines are noise and skipped. Names are normalised
(``Train Loss`` to ``train_loss``, ``Valid Loss`` to ``valid_loss``) so the
canonical aliases apply.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.runlog import RunLog
from tracker.readers._sniffing import Confidence, Sample
from tracker.readers.text._engine import Context, Dialect, Rule
from tracker.readers.text._values import NUM, num

_MARKER = re.compile(
    r"^\W*(?P<kind>epoch|step|iter|iteration|global_step)\b[ :=#]*(?P<n>\d+)\b", re.IGNORECASE
)
_PAIR = re.compile(
    rf"(?P<key>[A-Za-z][A-Za-z0-9_ ./()-]{{0,40}}?)\s*(?::|=)\s*"
    rf"(?P<value>{NUM})(?P<unit>s|ms|%)?(?![\w.:/])"
)
_TQDM = ("it/s]", "s/it]", "it/s,", "s/it,", "%|")
# Markers counted this many distinct times make a file a log, not a config of key: value lines.
MIN_MARKERS = 3


def _line(match: re.Match[str], ctx: Context) -> bool:
    text = ctx.line.text
    if any(noise in text for noise in _TQDM):
        return True
    metrics = {}
    marker = _MARKER.match(text)
    if marker is not None:
        # The first kind of marker met counts the steps; an epoch beside steps is a metric.
        kind = "epoch" if marker["kind"].lower() == "epoch" else "step"
        if ctx.state.setdefault("counter", kind) == kind:
            ctx.state["step"] = int(marker["n"])
        else:
            metrics[kind] = float(marker["n"])
        text = text[marker.end():]
    for pair in _PAIR.finditer(text):
        key = "_".join(pair["key"].split()).lower()
        value = num(pair["value"])
        if pair["unit"] == "ms":
            key, value = f"{key}_s", value / 1000
        elif pair["unit"] == "s":
            key = f"{key}_s"
        metrics[key] = value
    if not metrics or "step" not in ctx.state:
        return False  # not a record: let the crash scan see it
    ctx.runs.point(ctx.state["step"], metrics, ctx.wall())
    return True


RULES = (Rule("", re.compile(r"(?::|=)\s*[-+.\d]|^\W*(?:epoch|step|iter)", re.IGNORECASE), _line),)


DIALECT = Dialect(name="console", framework="script", rules=RULES, signatures=())


def sniff(sample: Sample) -> float:
    """Low confidence, and only for logs with several step markers and pairs."""
    markers = set()
    pairs = 0
    for text in sample.lines:
        if any(noise in text for noise in _TQDM):
            continue
        marker = _MARKER.match(text)
        if marker is not None:
            markers.add(int(marker["n"]))
        pairs += bool(_PAIR.search(text))
    enough = len(markers) >= MIN_MARKERS and pairs >= MIN_MARKERS
    return Confidence.FALLBACK if enough else Confidence.NONE


def read_runs(path: Path) -> list[RunLog]:
    return DIALECT.read_runs(path)
