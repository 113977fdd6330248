"""Checkpoint inspection never runs what a pickle names: malicious files are found, not loaded."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from tracker.checkpoints.inspect import UNKNOWN, inspect_file
from tracker.checkpoints.pickles import Call, Global, Tensor, scan


class Planted:
    """Unpickling this runs a shell command that creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Opener:
    """Unpickling this opens ``marker`` for writing, which creates it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def plant(folder: Path, marker: Path) -> list[Path]:
    """Malicious files where checkpoints keep state: optimizer.pt, a .ckpt, training_args.bin."""
    import torch

    ckpt_dir = folder / "checkpoint-4"
    ckpt_dir.mkdir(parents=True)
    (ckpt_dir / "optimizer.pt").write_bytes(pickle.dumps(Planted(marker), protocol=2))
    torch.save(Opener(marker), ckpt_dir / "training_args.bin")
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "step": 4}, ckpt_dir / "scheduler.pt",
               _use_new_zipfile_serialization=False)
    lightning = folder / "checkpoints" / "epoch=0-step=4.ckpt"
    lightning.parent.mkdir()
    torch.save({"state_dict": {"w": torch.zeros(2)}, "optimizer_states": [Planted(marker)],
                "lr_schedulers": [], "loops": {}, "global_step": 4,
                "pytorch-lightning_version": "2.6.6"}, lightning)
    return [ckpt_dir / "optimizer.pt", ckpt_dir / "training_args.bin", lightning]


def test_planted_pickles_are_reported_and_never_run(tmp_path, store):
    from tracker.checkpoints import manager
    from tracker.checkpoints.discover import discover

    marker = tmp_path / "PWNED"
    planted = plant(tmp_path / "run", marker)
    (tmp_path / "run" / "log.jsonl").write_text(
        '{"headroom": 1, "run": {"name": "planted"}}\n{"step": 4, "loss": 1.0}\n')

    found = {Path(c.path).name: c for c in discover(tmp_path / "run" / "log.jsonl", {}, [])}
    hf, lightning = found["checkpoint-4"], found["epoch=0-step=4.ckpt"]
    assert hf.has["optimizer"] is None  # could not be seen into: unknown, never loaded
    assert f"optimizer.pt: {UNKNOWN}" in hf.warnings
    assert any("optimizer.pt would run posix.system" in w for w in hf.warnings)
    assert any("training_args.bin would run io.open" in w for w in hf.warnings)
    assert lightning.has["model"] is True and lightning.has["optimizer"] is True
    assert any("would run posix.system" in w for w in lightning.warnings)

    from tracker.ingest import ingest

    report = ingest(store, [tmp_path / "run"])
    assert report.ok, report.to_dict()
    run_id = report.results[0].run_id
    manager.rescan(store, run_id)
    answer = manager.report(store, run_id)
    names = {Path(c.path).name for c in answer.checkpoints}
    assert names == {"checkpoint-4", "epoch=0-step=4.ckpt"}
    assert not marker.exists()

    # The planted files are really malicious: a plain unpickler runs them (here, on purpose).
    pickle.loads(planted[0].read_bytes())
    assert marker.exists()


def test_scan_follows_torch_files_without_importing_anything(tmp_path):
    import torch

    model = torch.nn.Linear(3, 4)
    torch.save({"model": model.state_dict(), "step": 7, "lr": 0.1, "tags": {"a", "b"}},
               tmp_path / "new.pt")
    torch.save({"model": model.state_dict(), "step": 7}, tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    for name in ("new.pt", "old.pt"):
        info = inspect_file(tmp_path / name)
        assert info.format == "torch" and info.dangerous == []
        assert info.value["step"] == 7
        assert info.value["model"]["weight"] == Tensor((4, 3), "torch.FloatStorage",
                                                        info.value["model"]["weight"].key, 0)
    assert sorted(inspect_file(tmp_path / "new.pt").value["tags"]) == ["a", "b"]


def test_scan_records_calls_it_does_not_make():
    found = scan(pickle.dumps({"when": __import__("datetime").date(2026, 1, 2)}))
    assert isinstance(found.value["when"], Call)
    assert found.value["when"].name == "datetime.date"
    assert found.globals == {Global("datetime", "date")}
    assert found.dangerous == ["datetime.date"]  # outside torch's weights_only allowlist


@pytest.mark.parametrize("data, fmt, error", [
    (b"\x80\x04\x95", "unreadable", "not a readable pickle"),
    (b"not a pickle at all", "other", ""),
    (b"", "other", ""),
])
def test_damaged_files_are_reported_in_words(tmp_path, data, fmt, error):
    path = tmp_path / "optimizer.pt"
    path.write_bytes(data)
    info = inspect_file(path)
    assert info.format == fmt and info.error.startswith(error)


def test_a_checkpoint_cut_short_while_saving_is_listed_as_unreadable(tmp_path):
    import torch

    from tracker.checkpoints.files import read

    torch.save({"step": 1, "w": torch.zeros(100)}, tmp_path / "full.pt")
    data = (tmp_path / "full.pt").read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(data[: len(data) // 2])
    ckpt = read(tmp_path / "cut.ckpt")
    assert ckpt.warnings == ["cut.ckpt: a damaged zip file (cut short while saving?)"]
    assert (ckpt.status, ckpt.complete, ckpt.has["model"]) == ("unreadable", None, None)
