"""Exported configs load in the libraries that consume them.

The plans are the ones ``headroom size --fit-to-card --export`` writes for an
8B LoRA on one RTX 4090 and a 70B full fine-tune on 8 H100s (FSDP, and ZeRO-3
for DeepSpeed, which has no FSDP). transformers, accelerate, DeepSpeed and
Lightning are installed and read the files themselves; torchtune and axolotl
do not install beside Headroom's pins, so their keys are checked against the
lists scripts/framework_keys.py took from torchtune 0.6.1 and axolotl 0.19.0
(axolotl's own schema validates them too where axolotl is importable).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shlex
from pathlib import Path
from unittest import mock

import pytest
import yaml

from tests.conftest import ROOT
from tracker.cli import main

KEYS = ROOT / "tests" / "data" / "framework_keys"
CASES = {
    "lora_4090": ["--model", "llama-3.1-8b", "--method", "lora", "--batch", "2", "--seq", "2048",
                  "--gpu", "rtx-4090", "--gpus", "1"],
    "fsdp_70b": ["--model", "llama-3.1-70b", "--method", "full", "--batch", "1", "--seq", "4096",
                 "--gpu", "h100", "--gpus", "8", "--fsdp"],
    "zero3_70b": ["--model", "llama-3.1-70b", "--method", "full", "--batch", "1", "--seq", "4096",
                  "--gpu", "h100", "--gpus", "8", "--zero", "3"],
}


def exported(tmp_path: Path, case: str, fmt: str, framework: str = "hf") -> Path:
    path = tmp_path / f"{case}-{framework}.{fmt}"
    assert main(["size", *CASES[case], "--fit-to-card", "--no-history", "--framework", framework,
                 "--export", fmt, "-o", str(path)]) == 0
    return path


@pytest.fixture
def world(monkeypatch):
    """Pretend to be one rank of ``n``: the libraries check batch sizes against it."""
    def set_size(n: int) -> None:
        import deepspeed.comm as dist

        monkeypatch.setattr(dist, "get_rank", lambda *a, **k: 0)
        monkeypatch.setattr(dist, "get_world_size", lambda *a, **k: n)
    return set_size


@pytest.mark.parametrize("case", ["lora_4090", "fsdp_70b", "zero3_70b"])
def test_hf_training_arguments_take_the_json(case, tmp_path):
    import transformers.training_args as training_args
    from transformers import TrainingArguments

    kwargs = json.loads(exported(tmp_path, case, "hf").read_text())
    gpus = 1 if case == "lora_4090" else 8
    # This CPU has no bf16 GPU, and no process group of 8: say so, and nothing else.
    with mock.patch.object(training_args, "is_torch_bf16_gpu_available", return_value=True), \
            mock.patch.object(TrainingArguments, "world_size", new_callable=mock.PropertyMock,
                              return_value=gpus):
        args = TrainingArguments(**kwargs)
        assert args.per_device_train_batch_size == kwargs["per_device_train_batch_size"]
        assert args.bf16 and args.run_name.startswith("plan-")
        if case == "fsdp_70b":
            assert args.fsdp and args.fsdp_plugin_args["fsdp_version"] == 2
            assert args.fsdp_config["activation_checkpointing"] is True
        if case == "zero3_70b":
            ds = args.hf_deepspeed_config
            assert ds.config["zero_optimization"]["stage"] == 3 and ds.mismatches == []


@pytest.mark.parametrize("case", ["lora_4090", "fsdp_70b", "zero3_70b"])
def test_accelerate_reads_the_yaml_and_builds_its_plugin(case, tmp_path, monkeypatch):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    path = exported(tmp_path, case, "accelerate")
    config = load_config_from_file(str(path))
    assert config.num_processes == (1 if case == "lora_4090" else 8)
    # What `accelerate launch --config_file` does before it starts the processes.
    args, defaults, _ = _validate_launch_command(
        launch_command_parser().parse_args(["--config_file", str(path), "train.py"]))
    assert args.mixed_precision == "bf16"
    if case == "fsdp_70b":
        for key, value in prepare_multi_gpu_env(args).items():
            monkeypatch.setenv(key, value)
        plugin = FullyShardedDataParallelPlugin()
        assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is True
        assert plugin.activation_checkpointing and plugin.cpu_offload is not None
    elif case == "zero3_70b":
        args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config)
        for key, value in prepare_deepspeed_cmd_env(args)[1].items():
            monkeypatch.setenv(key, value)
        zero = DeepSpeedPlugin().deepspeed_config["zero_optimization"]
        assert zero["stage"] == 3 and zero["offload_optimizer"]["device"] == "cpu"


@pytest.mark.parametrize("case, gpus", [("lora_4090", 1), ("zero3_70b", 8)])
def test_deepspeed_takes_the_json(case, gpus, tmp_path, world):
    from deepspeed.runtime.config import DeepSpeedConfig

    path = exported(tmp_path, case, "deepspeed")
    world(gpus)
    config = DeepSpeedConfig(str(path))  # validates every section; asserts the batch sizes
    plan = json.loads(path.read_text())
    assert config.train_batch_size == plan["train_batch_size"]
    assert config.zero_optimization_stage == plan["zero_optimization"]["stage"]
    assert config.gradient_clipping == 1.0 and config.bfloat16_config.enabled
    world(gpus * 2)  # launched on the wrong number of GPUs: DeepSpeed refuses
    with pytest.raises(AssertionError, match="train_batch_size"):
        DeepSpeedConfig(str(path))


@pytest.mark.parametrize("case", ["lora_4090", "fsdp_70b"])
def test_torchtune_overrides_are_keys_of_the_recipe_and_its_config(case, tmp_path):
    known = json.loads((KEYS / "torchtune-0.6.1.json").read_text())
    text = exported(tmp_path, case, "torchtune", "torchtune").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("# tune run"))
    recipe, base = line.split(" --config ")[0].split()[-1], line.split(" --config ")[1].split()[0]
    shipped = known["configs"][base]
    assert shipped["recipe"] == recipe
    allowed = set(shipped["keys"]) | set(known["recipes"][recipe])
    overrides = _dotted(yaml.safe_load(text))
    assert set(overrides) <= allowed, set(overrides) - allowed
    shown = {f"{k}=[{','.join(v)}]" if isinstance(v, list) else f"{k}={v}"
             for k, v in overrides.items()}
    assert shown <= set(line.split())  # the tune run line applies the same overrides


@pytest.mark.parametrize("case", ["lora_4090", "fsdp_70b", "zero3_70b"])
def test_axolotl_config_keys_are_its_schemas(case, tmp_path):
    from transformers.training_args import OptimizerNames

    known = json.loads((KEYS / "axolotl-0.19.0.json").read_text())
    config = yaml.safe_load(exported(tmp_path, case, "axolotl", "axolotl").read_text())
    assert set(config) <= set(known["top"]), set(config) - set(known["top"])
    assert set(config.get("fsdp_config", {})) <= set(known["fsdp_config"])
    assert config["attn_implementation"] in known["attn_implementation"]
    assert config["optimizer"] in {o.value for o in OptimizerNames}
    if config.get("activation_offloading"):
        assert config["gradient_checkpointing"] or config["fsdp_config"]["activation_checkpointing"]
    schema = pytest.importorskip("axolotl.utils.schemas.config")
    liger = pytest.importorskip("axolotl.integrations.liger.args")

    class WithPlugin(schema.AxolotlInputConfig, liger.LigerArgs):  # as axolotl merges a plugin
        pass

    WithPlugin(**config, datasets=[{"path": "tatsu-lab/alpaca", "type": "alpaca"}],
               learning_rate=2e-5)  # the parts of the config that stay the user's


@pytest.mark.parametrize("case", ["lora_4090", "fsdp_70b", "zero3_70b"])
def test_lightning_builds_the_strategy_and_takes_the_trainer_arguments(case, tmp_path):
    from typing import get_args

    import lightning as L
    from lightning.fabric.connector import _PRECISION_INPUT_STR

    code = exported(tmp_path, case, "lightning").read_text()
    tree = ast.parse(code)
    *setup, trainer = tree.body
    namespace: dict = {}
    exec(compile(ast.Module(setup, []), "lightning_trainer.py", "exec"), namespace)  # noqa: S102
    call = trainer.value
    kwargs = {k.arg: eval(compile(ast.Expression(k.value), "arg", "eval"), namespace)  # noqa: S307
              for k in call.keywords}
    inspect.signature(L.Trainer).bind(**kwargs)
    assert kwargs["precision"] in get_args(_PRECISION_INPUT_STR)
    assert kwargs["devices"] == (1 if case == "lora_4090" else 8)
    if case == "zero3_70b":  # DeepSpeed's strategy runs on a CPU accelerator: build the Trainer
        built = L.Trainer(**{**kwargs, "accelerator": "cpu", "devices": 1}, logger=False,
                          enable_checkpointing=False)
        assert built.strategy.config["zero_optimization"]["stage"] == 3


def test_launch_lines_parse_with_torchrun_and_accelerate(tmp_path):
    from accelerate.commands.launch import launch_command_parser
    from torch.distributed.run import get_args_parser

    text = exported(tmp_path, "fsdp_70b", "launch").read_text()
    lines = {ln.split()[0]: shlex.split(ln) for ln in text.splitlines()
             if ln.startswith(("torchrun", "accelerate"))}
    torchrun = get_args_parser().parse_args(lines["torchrun"][1:])
    assert torchrun.nproc_per_node == "8" and torchrun.standalone
    launch = launch_command_parser().parse_args(lines["accelerate"][2:])
    assert launch.num_processes == 8 and launch.num_machines == 1
    assert os.path.basename(launch.config_file) == "accelerate.yaml"


def _dotted(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
