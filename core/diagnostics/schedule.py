"""LR-schedule anomalies: the learning rate jumping up, or its warm-up starting over, mid-run.

After the warm-up an LR only falls or holds (cosine, linear, WSD, step decay);
a rise is a scheduler that restarted, a scheduler stepped per epoch instead of
per step, or a manual change. Rises at a resume are the resume rule's
(the likely cause there is scheduler state not restored), and schedulers
that rise on purpose (cosine with restarts, cyclic) are left alone.
"""

from __future__ import annotations

from core.diagnostics._stats import finite, step_interval
from core.diagnostics.boundaries import NEAR, LrJump, lr_jumps, resume_points
from core.diagnostics.finding import WARNING, Finding, RunData

REWARMUP = 3  # a rise that goes on for this many more points is a warm-up starting over


def lr_schedule(run: RunData) -> list[Finding]:
    jumps = _unexplained(run, lr_jumps(run))
    if not jumps:
        return []
    restarts = [j for j in jumps if j.climb >= REWARMUP]
    biggest = max(jumps, key=lambda j: j.after / j.before)
    listed = [{"step": j.step, "lr_before": j.before, "lr_after": j.after} for j in jumps[:20]]
    evidence = {"jumps": listed, "count": len(jumps), "warmup_restarts": len(restarts)}
    if restarts:
        kind, what = "lr_restart", f"The LR warm-up started over {_times(len(restarts))}"
    else:
        kind, what = "lr_jump", f"The LR jumped up {_times(len(jumps))}"
    message = (f"{what}, the largest at step {biggest.step}: {biggest.before:.3g} → "
               f"{biggest.after:.3g} ({biggest.after / biggest.before:.3g}×)")
    return [Finding(
        kind, WARNING, message,
        "The LR scheduler restarted (a new scheduler, or its state not restored), is stepped "
        "per epoch instead of per step, or the LR was changed by hand.",
        "Restore the scheduler state when resuming; check the scheduler's interval "
        "(Lightning: interval='step') and total steps; if the rise is intended, ignore this.",
        jumps[0].step, jumps[-1].step, "lr", tuple(j.step for j in jumps), evidence,
    )]


def _unexplained(run: RunData, jumps: list[LrJump]) -> list[LrJump]:
    """Jumps not at a resume boundary (those are reported as a rebound after resume)."""
    lr = run.get("lr")
    if not jumps or lr is None:
        return jumps
    near = NEAR * step_interval(finite(lr)[0])
    starts = [r.step for r in resume_points(run)]
    return [j for j in jumps if not any(0 <= j.step - s <= near for s in starts)]


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
