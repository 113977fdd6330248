"""The pickle scanner allows what torch's ``weights_only`` unpickler allows, and flags the rest.

Each case is checked against torch itself: a global the scanner lets pass must
load with ``torch.load(weights_only=True)``, and one it flags must be refused.
Nothing is ever executed: each hostile pickle would create a marker file.
"""

from __future__ import annotations

import pickle

import pytest

from tracker.checkpoints.inspect import inspect_file

# Callables that run code and that a denylist of "dangerous modules" missed.
RUNS_CODE = [("cProfile", "run"), ("timeit", "timeit"), ("pydoc", "pipepager"),
             ("torch.hub", "load"), ("profile", "run"), ("pdb", "run"), ("trace", "Trace"),
             ("builtins", "print"), ("torch.serialization", "load"), ("numpy", "load"),
             ("datetime", "date")]


def calling(module: str, name: str, arg: str) -> bytes:
    """A protocol-2 pickle that calls ``module.name(arg)`` on load."""
    text = arg.encode()
    return (b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"X" + len(text).to_bytes(4, "little")
            + text + b"\x85R.")


@pytest.mark.parametrize("module, name", RUNS_CODE)
def test_a_global_outside_the_allowlist_is_reported(tmp_path, module, name):
    import torch

    marker = tmp_path / "PWNED"
    path = tmp_path / "model.pt"
    path.write_bytes(calling(module, name, f"open({str(marker)!r}, 'w')"))

    info = inspect_file(path)

    assert info.dangerous == [f"{module}.{name}"]
    assert any(f"would run {module}.{name}" in w for w in info.warnings())
    with pytest.raises(pickle.UnpicklingError):  # torch agrees: weights_only refuses it
        torch.load(path, weights_only=True)
    assert not marker.exists()


def test_what_torch_and_numpy_save_in_checkpoints_passes(tmp_path):
    from collections import Counter, OrderedDict

    import numpy as np
    import torch

    state = {
        "model": torch.nn.Linear(3, 2).state_dict(),
        "param": torch.nn.Parameter(torch.ones(2)),
        "half": torch.zeros(2, dtype=torch.bfloat16), "ints": torch.arange(3),
        "order": OrderedDict(a=1), "counts": Counter("aab"), "tags": {"a", "b"},
        "size": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.float16,
        "bytes": bytearray(b"ab"), "complex": 1 + 2j, "step": 7,
    }
    path = tmp_path / "full.pt"
    torch.save(state, path)
    torch.save(state, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    rng = tmp_path / "rng_state.pth"  # HF: numpy's RNG state beside torch's
    torch.save({"numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()}, rng)

    for p in (path, tmp_path / "legacy.pt"):
        info = inspect_file(p)
        assert info.dangerous == [] and info.value["step"] == 7
        torch.load(p, weights_only=True)  # torch agrees
    assert inspect_file(rng).dangerous == []


def test_hf_argument_records_are_noted_not_flagged(tmp_path):
    """training_args.bin pickles TrainingArguments: torch refuses it too, and it is said so."""
    import torch

    path = tmp_path / "training_args.bin"
    path.write_bytes(calling("transformers.training_args", "TrainingArguments", "out"))

    info = inspect_file(path)

    assert info.dangerous == [] and not any(" would run " in w for w in info.warnings())
    assert info.records == ["transformers.training_args.TrainingArguments"]
    assert "needs torch.load(weights_only=False)" in info.notes()[0]
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
