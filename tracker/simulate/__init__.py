"""A training or inference step of the model's own code, on fake tensors, counted by PyTorch.

    from tracker.simulate import simulate
    result = simulate(spec, setup)        # Simulation: bytes per category, phase, notes

The model is built from its Hugging Face config by transformers itself (PEFT
for LoRA, bitsandbytes' storage for QLoRA), on fake tensors: no weights, no
GPU, seconds for any size. PyTorch's ``MemTracker`` sees every tensor the
step allocates. One and two blocks of each stack are simulated and each
segment of the step is extrapolated to the real depth (exact for identical
blocks). Importing this package imports neither torch nor transformers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from core.memory import GIB, ModelSpec, Setup, check
from core.memory.precision import PAGED

Progress = Callable[[int, int, str], None]


class SimulationError(ValueError):
    """A setup the simulation cannot run; one line for the user."""


class SimulationCancelled(Exception):
    """The caller asked the simulation to stop."""


@dataclass(frozen=True)
class Simulation:
    """The simulated peak of allocated memory on one GPU, in bytes."""

    allocated: float
    breakdown: dict[str, float]  # parameters, gradients, optimizer_state, activations, temporaries
    phase: str  # "forward", "backward", "optimizer step" or "generation"
    seconds: float
    layers_simulated: int  # blocks in the largest model built
    notes: tuple[str, ...] = ()

    def gib(self) -> dict[str, float]:
        return {k: v / GIB for k, v in self.breakdown.items()}

    def as_dict(self) -> dict:
        """The ``simulated`` entry of ``headroom size --json``."""
        return {"allocated_gib": round(self.allocated / GIB, 3),
                "breakdown_gib": {k: round(v, 3) for k, v in self.gib().items()},
                "phase": self.phase, "seconds": round(self.seconds, 2),
                "layers_simulated": self.layers_simulated, "notes": list(self.notes)}


def simulate(spec: ModelSpec, setup: Setup, progress: Progress | None = None,
             cancelled: Callable[[], bool] | None = None,
             config: dict | None = None) -> Simulation:
    """Simulate one step of ``setup`` on ``spec`` (raises SimulationError where it cannot).

    ``config``: the Hugging Face config ``spec`` was made from, when the caller holds it
    (a spec from a preset or a ``config.json`` path finds its own).
    """
    from tracker.simulate.config import max_positions, model_config, stacks
    from tracker.simulate.extrapolate import extrapolate, variants
    from tracker.simulate.step import measure

    check(spec, setup)
    _supported(setup)
    started = time.perf_counter()
    config = model_config(spec, config)
    limit = max_positions(config)
    if limit and setup.seq_len > limit:
        raise SimulationError(f"{spec.name} has learned positions for {limit:,} tokens; "
                              f"a sequence of {setup.seq_len:,} cannot run")
    stack_list = stacks(config)
    plan = variants(stack_list)
    measured = []
    for done, counts in enumerate(plan):
        if cancelled is not None and cancelled():
            raise SimulationCancelled
        if progress is not None:
            progress(done, len(plan), f"simulating {sum(counts.values())} blocks")
        try:
            measured.append(measure(config, setup, stack_list, counts))
        except Exception as err:  # transformers cannot build or run this model as given
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise SimulationError(f"the simulation could not run {spec.name}: {first}") from err
    peaks, optimizer_state = extrapolate(stack_list, plan, measured)
    label, (total, snap) = max(peaks.items(), key=lambda item: item[1][0])
    if progress is not None:
        progress(len(plan), len(plan), "done")
    return Simulation(
        allocated=total, breakdown=_breakdown(snap, optimizer_state),
        phase="generation" if not setup.training else label[0],
        seconds=time.perf_counter() - started,
        layers_simulated=max(sum(c.values()) for c in plan),
        notes=tuple(_notes(spec, setup, stack_list, plan, measured)))


def _supported(setup: Setup) -> None:
    lay = setup.layout
    if lay.tp > 1 or lay.pp > 1:
        raise SimulationError("tensor and pipeline parallelism are analytical only: "
                              "the simulation covers one GPU holding the whole model")
    if lay.n_gpus > 1 and (lay.zero or lay.fsdp):
        raise SimulationError("ZeRO and FSDP sharding are analytical only: the simulation "
                              "covers one GPU holding the whole model")
    if lay.offload_optimizer or lay.offload_params:
        raise SimulationError("CPU offload is analytical only")
    if setup.precision == "fp8":
        raise SimulationError("fp8 training needs its kernels (torchao, Transformer Engine); "
                              "the fp8 figure is analytical only")
    if lay.cp > 1:
        raise SimulationError("context parallelism is analytical only: the simulation covers "
                              "one GPU holding the whole sequence")
    knobs = [name for name, on in (
        ("torch.compile", setup.compile), ("activation offload", setup.activation_offload),
        ("optimizer in backward", setup.optimizer_in_backward),
        ("per-op recompute", setup.recompute == "op"))
        if on]
    if knobs:
        raise SimulationError(f"{' and '.join(knobs)} {'is' if len(knobs) == 1 else 'are'} "
                              "analytical only: the simulation runs the model's eager code")


def _breakdown(snap: dict[str, float], optimizer_state: float) -> dict[str, float]:
    """The report's five categories; optimizer-step temporaries are tracked as state."""
    from tracker.simulate.segments import CATEGORIES, GROUPS

    out = dict.fromkeys(CATEGORIES, 0.0)
    for key, value in snap.items():
        if key in GROUPS:
            out[GROUPS[key]] += value
    held = min(out["optimizer_state"], optimizer_state)
    out["temporaries"] += out["optimizer_state"] - held
    out["optimizer_state"] = held
    return out


def _notes(spec: ModelSpec, setup: Setup, stack_list, plan, measured) -> list[str]:
    notes = []
    for s in stack_list:
        built = sorted({c[s.name] for c in plan})
        if s.count > built[-1]:
            kind = f"{s.name} blocks" if len(stack_list) > 1 else "blocks"
            notes.append(f"{' and '.join(map(str, built))} of {s.count} {kind} simulated, "
                         "the rest extrapolated (exact for identical blocks)")
        if s.prefix:
            notes.append(f"the first {s.prefix} dense block(s) simulated in full, "
                         "the MoE blocks extrapolated")
    if spec.family in ("gemma2", "gemma3", "gemma3_text"):
        notes.append("sliding-window and global layers keep the same tensors here; "
                     "the shared masks are built once per step")
    if setup.layout.n_gpus > 1:
        notes.append("one data-parallel replica simulated; DDP's gradient buckets are analytical")
    if setup.optimizer in PAGED:
        notes.append("the paged optimizer keeps the state of tensors of 100,000 elements or "
                     "more in CUDA unified memory, outside PyTorch's allocated counter: not "
                     "counted here")
    if setup.framework != "hf":
        notes.append(f"simulates the Hugging Face implementation, not {setup.framework}'s")
    for m in measured[:1]:
        notes.extend(m.notes)
    return notes
