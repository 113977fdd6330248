"""What the fix dialog says about a run that ran out of GPU memory (plain strings, no Qt).

Built from ``tracker.fix.as_dict``, the same report ``headroom fix --json`` prints.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracker.store import Store

HEADERS = ("#", "Change", "GPUs", "GiB per GPU", "Speed kept", "Global batch")
LOOKING = "Looking for the smallest change that fits…"
NOTHING = ("No change on these GPUs, more of them or a bigger card fits with the margin. "
           "Size the run in the wizard to change the experiment itself.")


def heading(report: dict[str, Any]) -> str:
    """The run, its card, and what the failure says, as rich text."""
    from tracker.fix import failure_text  # it loads the store: not before the window shows

    name = html.escape(str(report["name"]))
    return (f"<b>{name}</b>: {html.escape(str(report['model']))} on {report['gpus']} × "
            f"{html.escape(str(report['gpu']))}, global batch {report['global_batch']}"
            f"<br>{html.escape(failure_text(report))}")


def rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    return [(str(n), f"{fix['rung']}: {changes(fix)}", f"{fix['gpus']} × {fix['gpu']}",
             f"{fix['device_gib']:.1f} of {fix['capacity_gib']:g}", f"{fix['speed']:.0%}",
             str(fix["global_batch"])) for n, fix in enumerate(report["fixes"], 1)]


def changes(fix: dict[str, Any]) -> str:
    return "; ".join(fix["changes"]).replace(" -> ", " → ") or "as asked"


def config(fix: dict[str, Any]) -> str:
    """The proposal's exported config, with what it leaves to the user after it."""
    exported = fix.get("export")
    if not exported:
        return "No config format can express this change."
    notes = "".join(f"\n# note: {n}" for n in exported["notes"])
    return exported["text"] + notes


def answer(store: Store, run_id: int) -> dict[str, Any]:
    """The fix report for one run (run in the pool; a ValueError's message reaches the dialog)."""
    from tracker.fix import answer as search
    from tracker.fix import as_dict

    return as_dict(search(store, store.run(run_id)))
