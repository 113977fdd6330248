"""Does a training config fit a GPU? The reading behind ``headroom check``.

A config file (HF ``TrainingArguments`` as JSON or YAML, an accelerate
config, a DeepSpeed JSON, a torchtune or axolotl YAML, a PEFT adapter config,
or any argument dump the log readers understand) is read into the Setup
fields it states; the framework's defaults fill the rest, and what was
assumed is said. HF-style arguments go through the readers' own parsing
(:func:`tracker.readers._trainer_rows.trainer_shape`); the formats Headroom
exports are read back by their exporters' ``read``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.export import accelerate, axolotl, deepspeed, torchtune
from core.gpus import GPU
from core.memory import Layout, Setup
from core.memory.from_shape import stated_fields
from core.shape import RunShape
from core.sizing import planned_setup
from tracker.readers._common import ReaderError, load_yaml, parse_json, read_text
from tracker.readers._trainer_rows import trainer_shape

READERS = {"deepspeed": deepspeed.read, "accelerate": accelerate.read,
           "torchtune": torchtune.read, "axolotl": axolotl.read}
FRAMEWORKS = {"deepspeed": "deepspeed", "torchtune": "torchtune", "axolotl": "axolotl"}
# Facts a verdict rests on; the ones a config leaves unsaid are reported as assumed.
KEY_FACTS = ("method", "precision", "micro_batch", "grad_accum", "seq_len", "recompute")
LAYOUT_NAMES = frozenset(Layout.__dataclass_fields__)


class ConfigError(ValueError):
    """A config that cannot be read or states nothing to size; one line for the user."""


@dataclass(frozen=True)
class Stated:
    """What one config file says about a run."""

    path: Path
    format: str  # "hf", "arguments", "peft", or a key of READERS
    framework: str
    fields: dict[str, Any] = field(default_factory=dict)  # Setup and Layout fields
    model: str | None = None  # the model it names, if any


def read_config(path: Path) -> Stated:
    """The Setup fields ``path`` states (ConfigError when it states none)."""
    data = _load(path)
    fmt = _detect(data)
    if fmt in READERS:
        fields = READERS[fmt](data)
    elif fmt == "peft":
        fields = _peft(data)
    else:
        fields = _arguments(data, path.parent)
    if not fields:
        raise ConfigError(f"{path.name}: no training settings found (batch, precision, "
                          "sharding...): not a training config")
    return Stated(path, fmt, FRAMEWORKS.get(fmt, "hf"), fields, _model_named(data, fmt))


def setup_for(stated: Stated, gpu: GPU, n_gpus: int | None = None,
              framework: str | None = None) -> tuple[Setup, list[str]]:
    """The run the config describes on ``gpu`` (``n_gpus`` wins over the config's count),
    and the key facts it left to defaults."""
    fields = dict(stated.fields)
    parallel = fields.get("tp", 1) * fields.get("pp", 1) * fields.get("cp", 1)
    count = n_gpus or fields.pop("n_gpus", None) or parallel  # at least one model replica
    fields.pop("n_gpus", None)
    layout = Layout(n_gpus=count, gpus_per_node=gpu.gpus_per_node,
                    **{k: fields.pop(k) for k in list(fields) if k in LAYOUT_NAMES})
    method = fields.pop("method", "full")
    setup = planned_setup(method, framework or stated.framework, layout, **fields)
    assumed = [name for name in KEY_FACTS if name not in stated.fields]
    if n_gpus is None and "n_gpus" not in stated.fields:
        assumed.append("n_gpus")
    return setup, assumed


# Reading


def _load(path: Path) -> dict[str, Any]:
    try:
        text = read_text(path)
        data = parse_json(text) if text.lstrip().startswith(("{", "[")) else load_yaml(path)
    except (OSError, ReaderError) as err:
        raise ConfigError(f"{path.name}: {getattr(err, 'strerror', None) or err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: not a config (a {type(data).__name__}, not a mapping)")
    return _plain_keys(_unwrap_wandb(data))


def _unwrap_wandb(data: dict[str, Any]) -> dict[str, Any]:
    """W&B's config.yaml keeps each value as ``{desc, value}``."""
    wrapped = [v for v in data.values() if isinstance(v, dict) and "value" in v]
    if not wrapped or len(wrapped) < len(data) // 2:
        return data
    return {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in data.items()}


def _plain_keys(data: Any) -> Any:
    """Megatron's ``--micro-batch-size`` as the ``micro_batch_size`` its arguments become."""
    if isinstance(data, dict):
        return {(k.lstrip("-").replace("-", "_") if isinstance(k, str) and k.startswith("--")
                 else k): _plain_keys(v) for k, v in data.items()}
    return data


def _detect(data: dict[str, Any]) -> str:
    if "peft_type" in data:
        return "peft"
    if "zero_optimization" in data or "train_micro_batch_size_per_gpu" in data:
        return "deepspeed"
    if "distributed_type" in data:
        return "accelerate"
    if "optimizer_in_bwd" in data or "enable_activation_checkpointing" in data or any(
            isinstance(v, dict) and "_component_" in v for v in data.values()):
        return "torchtune"
    if "base_model" in data or ("micro_batch_size" in data and "sequence_len" in data):
        return "axolotl"
    return "hf" if "per_device_train_batch_size" in data else "arguments"


def _peft(data: dict[str, Any]) -> dict[str, Any]:
    shape = RunShape()
    targets = data.get("target_modules")
    shape.update({"method": "lora", "lora_rank": data.get("r"),
                  "lora_targets": [targets] if isinstance(targets, str) else targets}, "config")
    return stated_fields(shape)


def _arguments(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """HF-style arguments (and any argument dump): the readers' parsing, plus the knobs
    HF names that a run's shape has no field for."""
    if isinstance(data.get("deepspeed"), str):  # a path beside the config, as HF takes it
        named = folder / data["deepspeed"]
        if named.is_file():
            data = {**data, "deepspeed": _load(named)}
    shape = RunShape()
    shape.update(trainer_shape(data), "config")
    fields = stated_fields(shape)
    if isinstance(data.get("deepspeed"), dict):
        fields.update(deepspeed.read(data["deepspeed"]))
    if data.get("use_liger_kernel") is True:
        fields["loss"] = "fused"
    return fields


def _model_named(data: dict[str, Any], fmt: str) -> str | None:
    keys = {"axolotl": ("base_model",), "peft": ("base_model_name_or_path",)}.get(
        fmt, ("model_name_or_path", "pretrained_model_name_or_path", "model"))
    for key in keys:
        if isinstance(data.get(key), str) and data[key].strip():
            return data[key].strip()
    return None
