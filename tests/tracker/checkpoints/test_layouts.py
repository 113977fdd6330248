"""Plain torch.save dicts, DeepSpeed, torch.distributed.checkpoint (torchtitan), Megatron.

The files are written by torch itself from a real model and optimizer after a
training step; DeepSpeed and Megatron cannot run here, so their folders are
laid out as those libraries do, with real torch.save files holding their keys.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pytest

from core.checkpoints import MISSING_WARNINGS
from core.resume import command
from tracker.checkpoints.discover import discover


@pytest.fixture
def trained():
    """A model, its optimizer and scheduler after two real steps."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    for _ in range(2):
        model(torch.randn(3, 4)).sum().backward()
        optimizer.step()
        scheduler.step()
    return model, optimizer, scheduler


def by_name(folder: Path) -> dict:
    return {Path(c.path).name: c for c in discover(folder / "train.log", {}, [])}


def test_plain_torch_save_dicts(tmp_path, trained):
    import torch

    model, optimizer, scheduler = trained
    full = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "step": 200, "epoch": 2,
            "rng_state": torch.get_rng_state()}
    torch.save(full, tmp_path / "ckpt_200.pt")
    torch.save({"model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(), "iteration": 100},
               tmp_path / "ckpt_100.pth")
    torch.save(model.state_dict(), tmp_path / "weights.bin", _use_new_zipfile_serialization=False)
    (tmp_path / "out").mkdir()  # nanoGPT's single, overwritten checkpoint
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "model_args": {"n_layer": 2}, "iter_num": 300, "best_val_loss": 1.5,
                "config": {"dataset": "shakespeare_char"}}, tmp_path / "out" / "ckpt.pt")
    data = tmp_path / "data" / "shakespeare_char"  # nanoGPT's tokens: raw uint16, no checkpoint
    data.mkdir(parents=True)
    (data / "train.bin").write_bytes(torch.arange(1000, dtype=torch.int16).numpy().tobytes())
    found = by_name(tmp_path)
    assert sorted(found) == ["ckpt.pt", "ckpt_100.pth", "ckpt_200.pt", "weights.bin"]
    nano = found["ckpt.pt"]
    assert (nano.step, nano.missing()) == (300, ["scheduler", "rng"])
    top = found["ckpt_200.pt"]
    assert (top.step, top.epoch, top.complete, top.weights) == (200, 2.0, True, "full")
    assert top.has == {"model": True, "optimizer": True, "scheduler": True, "rng": True,
                       "scaler": None, "trainer_state": True}
    older = found["ckpt_100.pth"]
    assert older.step == 100 and older.missing() == ["scheduler", "rng"]
    assert MISSING_WARNINGS["scheduler"] in older.resume_warnings()
    assert "model.load_state_dict(ckpt['model_state_dict'])" in command(older)
    bare = found["weights.bin"]
    assert bare.notes == ["weights only"] and bare.missing() == [
        "optimizer", "scheduler", "rng", "scaler", "trainer_state"]


def test_deepspeed_global_step_folders(tmp_path, trained):
    import torch

    model, optimizer, scheduler = trained
    for step in (10, 20):
        folder = tmp_path / f"global_step{step}"
        folder.mkdir()
        torch.save({"module": model.state_dict(), "optimizer": None, "global_steps": step,
                    "lr_scheduler": scheduler.state_dict(), "ds_version": "0.16.0",
                    "dp_world_size": 1, "mp_world_size": 1},
                   folder / "mp_rank_00_model_states.pt")
        torch.save({"optimizer_state_dict": optimizer.state_dict(), "ds_version": "0.16.0"},
                   folder / "zero_pp_rank_0_mp_rank_00_optim_states.pt")
    (tmp_path / "latest").write_text("global_step20")
    (tmp_path / "global_step20" / "zero_pp_rank_0_mp_rank_00_optim_states.pt").unlink()
    found = by_name(tmp_path)
    assert {n: (c.kind, c.step) for n, c in found.items()} == {
        "global_step10": ("deepspeed", 10), "global_step20": ("deepspeed", 20)}
    assert found["global_step10"].complete is True
    assert found["global_step10"].missing() == ["rng"]  # DeepSpeed does not save RNG state
    assert found["global_step20"].missing() == ["optimizer", "rng"]
    assert "named in the folder's `latest` file" in found["global_step20"].notes
    assert command(found["global_step10"]) == (
        f"engine.load_checkpoint({str(tmp_path)!r}, tag='global_step10')")


def test_torch_distributed_checkpoint_step_folders(tmp_path, trained):
    import torch.distributed.checkpoint as dcp

    model, optimizer, scheduler = trained
    folder = tmp_path / "checkpoint"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        for step in (5, 10):
            dcp.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "lr_scheduler": {"last_epoch": step}, "train_state": {"step": step}},
                     checkpoint_id=folder / f"step-{step}")
    (folder / "step-10" / ".metadata").unlink()  # a save that never finished
    found = by_name(tmp_path)
    done, torn = found["step-5"], found["step-10"]
    assert (done.kind, done.step, done.complete) == ("torchtitan", 5, True)
    assert done.missing() == ["rng"]
    assert (torn.complete, torn.warnings) == (False, [".metadata missing: the save did not finish"])
    assert command(done) == (f"--checkpoint.enable --checkpoint.folder {folder} "
                             "--checkpoint.load_step 5")


def test_megatron_iteration_folders(tmp_path, trained):
    import torch

    model, optimizer, scheduler = trained
    args = argparse.Namespace(save=str(tmp_path), load=None, tensor_model_parallel_size=1)
    for iteration, rng in ((100, True), (200, False)):
        rank = tmp_path / f"iter_{iteration:07d}" / "mp_rank_00"
        rank.mkdir(parents=True)
        state = {"args": args, "checkpoint_version": 3.0, "iteration": iteration,
                 "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "opt_param_scheduler": scheduler.state_dict()}
        if rng:
            state["rng_state"] = [{"random_rng_state": None, "torch_rng_state": None}]
        torch.save(state, rank / "model_optim_rng.pt")
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("200")
    found = by_name(tmp_path)
    assert {n: (c.kind, c.step) for n, c in found.items()} == {
        "iter_0000100": ("megatron", 100), "iter_0000200": ("megatron", 200)}
    assert found["iter_0000100"].complete and found["iter_0000100"].missing() == []
    assert found["iter_0000200"].missing() == ["rng"]  # saved with --no-save-rng
    assert command(found["iter_0000200"]) == f"--load {tmp_path} --ckpt-step 200"
