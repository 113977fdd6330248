"""Folder checkpoints: HF Trainer, DeepSpeed, torch.distributed.checkpoint / torchtitan, Megatron.

Each reader takes one checkpoint folder and says what it holds from its file
names and from the safe inspection of the files that carry the state.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.checkpoints import Checkpoint
from tracker.checkpoints.inspect import FileInfo, attrs, inspect_file, weights_kind
from tracker.checkpoints.parts import (
    add_files,
    as_step,
    new,
    parts_from_keys,
    step_from_name,
    step_from_value,
    walk_files,
)

HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
              "pytorch_model.bin.index.json", "adapter_model.safetensors", "adapter_model.bin")
HF_STATE_FILES = ("optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt", "training_args.bin")
DCP_GROUPS = {"optimizer": ("optimizer", "optim"), "scheduler": ("lr_scheduler", "scheduler"),
              "trainer_state": ("train_state", "iteration", "args"), "rng": ("rng_state", "rng")}
DEEPSPEED_DIR = re.compile(r"^global_step\d+$")


def hf(folder: Path) -> Checkpoint:
    """An HF Trainer ``checkpoint-N/`` folder (possibly with DeepSpeed state inside)."""
    ckpt = new(folder, "hf")
    ckpt.step = step_from_name(folder.name)
    files = {p.name: p for p in folder.iterdir() if p.is_file()}
    info = {name: inspect_file(files[name]) for name in (*HF_WEIGHTS, *HF_STATE_FILES,
            "trainer_state.json") if name in files}
    info.update({n: inspect_file(p) for n, p in files.items() if n.startswith("rng_state")})
    _hf_weights(ckpt, folder, info)
    _hf_state(ckpt, info, folder)
    read = {f.path: f for f in info.values()}
    add_files(ckpt, [read.get(p) or inspect_file(p, deep=False) for p in walk_files(folder)])
    return ckpt


def _hf_weights(ckpt: Checkpoint, folder: Path, info: dict[str, FileInfo]) -> None:
    weights = [info[n] for n in HF_WEIGHTS if n in info]
    ckpt.has["model"] = bool(weights) or any(folder.glob("pytorch_model_fsdp*"))
    for f in weights:
        if f.format == "json":  # a shard index: every shard it names must be here
            shards = set(attrs(f.value).get("weight_map", {}).values())
            gone = sorted(s for s in shards if not (folder / s).is_file())
            if gone:
                ckpt.has["model"] = False
                ckpt.warnings.append(f"weight shard(s) missing: {', '.join(gone)}")
        elif f.error:
            ckpt.has["model"] = False
    names = [n for f in weights for n in (f.tensor_names or [])]
    adapter = any(f.path.name.startswith("adapter_model") for f in weights)
    ckpt.weights = "adapter" if adapter else (weights_kind(names) or ("full" if weights else None))


def _hf_state(ckpt: Checkpoint, info: dict[str, FileInfo], folder: Path) -> None:
    optimizer = info.get("optimizer.pt") or info.get("optimizer.bin")
    deepspeed = [d for d in folder.iterdir() if d.is_dir() and DEEPSPEED_DIR.match(d.name)]
    sharded = bool(deepspeed) or (folder / "optimizer_0").is_dir()  # DeepSpeed, FSDP
    ckpt.has["optimizer"] = _holds(optimizer, "state") if optimizer else sharded
    ckpt.has["scheduler"] = _holds(info.get("scheduler.pt"))
    if deepspeed and not ckpt.has["scheduler"]:
        ckpt.has["scheduler"] = _deepspeed(deepspeed[0]).has["scheduler"]
    ckpt.has["rng"] = any(n.startswith("rng_state") for n in info)
    ckpt.has["trainer_state"] = "trainer_state.json" in info
    args = attrs(info["training_args.bin"].value) if "training_args.bin" in info else {}
    if "scaler.pt" in info:
        ckpt.has["scaler"] = True
    elif args.get("fp16"):
        ckpt.has["scaler"] = False
    _hf_best_metric(ckpt, args)
    state = attrs(info["trainer_state.json"].value) if "trainer_state.json" in info else {}
    ckpt.step = as_step(state.get("global_step")) if "global_step" in state else ckpt.step
    epoch = state.get("epoch")
    ckpt.epoch = float(epoch) if isinstance(epoch, (int, float)) and abs(epoch) < 1e15 else None
    ckpt.best_path = state.get("best_model_checkpoint")


def _holds(f: FileInfo | None, key: str | None = None) -> bool | None:
    """True when a state file can be seen to hold its state; None when it cannot be read."""
    if f is None:
        return False
    if f.format == "lfs":
        return True
    if not f.readable:
        return None
    return key is None or key in f.keys


def _hf_best_metric(ckpt: Checkpoint, args: dict[str, Any]) -> None:
    """``metric_for_best_model`` as the Trainer reads it: "eval_" prefixed, loss by default."""
    metric = args.get("metric_for_best_model")
    if not metric and args.get("load_best_model_at_end"):
        metric = "loss"
    if not isinstance(metric, str):
        return
    ckpt.monitor = metric if metric.startswith("eval_") else f"eval_{metric}"
    greater = args.get("greater_is_better")
    if greater is None:
        greater = not metric.endswith("loss")
    ckpt.monitor_mode = "max" if greater else "min"


def deepspeed(folder: Path) -> Checkpoint:
    """A DeepSpeed ``global_stepN/`` folder: model states plus ZeRO optimizer shards."""
    ckpt = _deepspeed(folder)
    add_files(ckpt, [inspect_file(p, deep=False) for p in walk_files(folder)])
    latest = folder.parent / "latest"
    if latest.is_file() and latest.read_text(errors="replace").strip() == folder.name:
        ckpt.notes.append("named in the folder's `latest` file")
    return ckpt


def _deepspeed(folder: Path) -> Checkpoint:
    ckpt = new(folder, "deepspeed")
    ckpt.step = step_from_name(folder.name)
    states = sorted(folder.glob("*model_states.pt"))
    shards = sorted(folder.glob("*optim_states.pt"))
    value = attrs(inspect_file(states[0]).value) if states else {}
    ckpt.has.update(parts_from_keys(value, value), model=bool(states))
    ckpt.has["optimizer"] = bool(shards) or value.get("optimizer") is not None
    ckpt.has["scheduler"] = value.get("lr_scheduler") is not None
    ckpt.has["scaler"] = None  # DeepSpeed keeps the loss scale in its optimizer state
    ckpt.step = step_from_value(value) or ckpt.step
    return ckpt


def dcp(folder: Path) -> Checkpoint:
    """A torch.distributed.checkpoint folder (torchtitan ``step-N/``): keys from ``.metadata``."""
    ckpt = new(folder, "torchtitan" if folder.name.startswith("step-") else "dcp")
    ckpt.step = step_from_name(folder.name)
    files = [inspect_file(p, deep=False) for p in walk_files(folder) if p.name != ".metadata"]
    if not (folder / ".metadata").is_file():
        add_files(ckpt, files)
        ckpt.warnings.append(".metadata missing: the save did not finish")
        ckpt.has = dict.fromkeys(ckpt.has, False)
        return ckpt
    meta = inspect_file(folder / ".metadata")
    add_files(ckpt, [meta, *files])
    keys = list(attrs(attrs(meta.value).get("state_dict_metadata")))
    if keys:
        ckpt.has.update(_dcp_parts(keys))
    if not any(f.path.suffix == ".distcp" for f in files):
        ckpt.warnings.append("no .distcp shard files: the tensors are missing")
        ckpt.has["model"] = False
    return ckpt


def _dcp_parts(keys: list[str]) -> dict[str, bool | None]:
    """DCP flattens the state dict to dotted keys: group them by their first component."""
    first = {k.split(".")[0] for k in keys}
    has: dict[str, bool | None] = {
        part: bool(first & set(names)) for part, names in DCP_GROUPS.items()
    }
    grouped = {n for names in DCP_GROUPS.values() for n in names} | {"dataloader"}
    has["model"] = bool(first - grouped)
    has["scaler"] = None
    return has


def megatron(folder: Path) -> Checkpoint:
    """A Megatron ``iter_NNNNNNN/`` folder: legacy ``mp_rank_*/model_optim_rng.pt`` or dist-ckpt."""
    if (folder / ".metadata").is_file():
        ckpt = dcp(folder)
        common = inspect_file(folder / "common.pt") if (folder / "common.pt").is_file() else None
        if common is not None and common.readable:
            ckpt.has["trainer_state"] = True
            ckpt.step = step_from_value(attrs(common.value)) or ckpt.step
    else:
        ckpt = new(folder, "megatron")
        ranks = sorted(folder.glob("mp_rank_*/model_optim_rng.pt"))
        value = attrs(inspect_file(ranks[0]).value) if ranks else {}
        ckpt.has.update(parts_from_keys(value, value))
        ckpt.has.update(scheduler="opt_param_scheduler" in value, scaler=None,
                        trainer_state="iteration" in value)
        ckpt.step = step_from_value(value)
        add_files(ckpt, [inspect_file(p, deep=False) for p in walk_files(folder)])
    ckpt.kind = "megatron"
    ckpt.step = ckpt.step if ckpt.step is not None else step_from_name(folder.name)
    return ckpt
