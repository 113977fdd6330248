"""The per-GPU memory model: a run's shape in, a component breakdown and three readings out.

Public API: :class:`ModelSpec` (architecture), :class:`Setup` and
:class:`Layout` (method, precision, optimizer, batch, parallelism),
:func:`estimate` returning an :class:`Estimate`. Pure Python, fast enough for
live what-if sliders (well under a millisecond per estimate).
"""

from core.memory.estimate import COMPONENTS, GIB, Estimate, estimate, model_states
from core.memory.setup import Layout, Setup, SetupError, check
from core.memory.spec import ModelSpec

__all__ = ["COMPONENTS", "GIB", "Estimate", "Layout", "ModelSpec", "Setup", "SetupError",
           "check", "estimate", "model_states"]
