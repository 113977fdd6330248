"""A plan's stamp: how an exported config and the run launched from it name the same plan.

``9f3c2a1b7d4e@20.35``: twelve hex digits of the plan's hash, then the
per-GPU GiB it predicted. Exports write it; the launch lines put it in
``HEADROOM_PLAN``; the recorders copy it into the run's header, so an
ingested run is linked to its plan and its peak can be set against the
prediction. Kept free of imports: the recorders read it in training processes.
"""

from __future__ import annotations

import os
import re

ENV = "HEADROOM_PLAN"
STAMP = re.compile(r"\b([0-9a-f]{12})(?:@(\d+(?:\.\d+)?))?\b")


def stamp(plan_hash: str, device_gib: float) -> str:
    return f"{plan_hash}@{device_gib:.2f}"


def parse(text: object) -> dict | None:
    """``{"hash", "device_gib"}`` from a stamp in ``text`` (None: no stamp there)."""
    match = STAMP.search(text) if isinstance(text, str) else None
    if match is None:
        return None
    return {"hash": match.group(1),
            "device_gib": float(match.group(2)) if match.group(2) else None}


def found(*candidates: object) -> dict | None:
    """The first stamp among ``candidates``, then in ``$HEADROOM_PLAN``."""
    for text in (*candidates, os.environ.get(ENV)):
        link = parse(text)
        if link is not None:
            return link
    return None
