"""Exports say what the plan decided, in each framework's words, and refuse what they cannot say."""

from __future__ import annotations

import json

import pytest
import yaml

from core import plan_stamp
from core.export import FORMATS, ExportError, Target, accelerate, axolotl, deepspeed, export, torchtune
from core.gpus import find
from core.memory import Layout
from core.models import preset
from core.sizing import Sizer, planned_setup

H100, RTX_4090 = find("h100"), find("rtx-4090")


def card_plan(model: str, method: str, gpu, n: int, framework: str = "hf", **layout):
    """The plan ``headroom size --fit-to-card`` picks for these cards."""
    spec = preset(model)
    micro, seq = (2, 2048) if n == 1 else (1, 4096)
    setup = planned_setup(method, framework, Layout(n_gpus=n, **layout), micro_batch=micro,
                          seq_len=seq)
    best = Sizer(spec).fit_to_card(setup, gpu, n).best
    assert best is not None
    return Target.of(spec, best)


@pytest.fixture(scope="module")
def lora_4090():
    return card_plan("llama-3.1-8b", "lora", RTX_4090, 1)


@pytest.fixture(scope="module")
def fsdp_70b():
    return card_plan("llama-3.1-70b", "full", H100, 8, fsdp="full")


def test_the_hash_names_what_the_plan_decides_and_the_stamp_reads_back(lora_4090):
    other = Target(lora_4090.spec, lora_4090.setup.but(micro_batch=3), lora_4090.gpu,
                   lora_4090.device_gib, lora_4090.capacity_gib)
    assert len(lora_4090.plan_hash) == 12 and lora_4090.plan_hash != other.plan_hash
    assert Target.of(lora_4090.spec, _plan_of(lora_4090)).plan_hash == lora_4090.plan_hash
    assert plan_stamp.parse(f"plan-{lora_4090.stamp}") == {
        "hash": lora_4090.plan_hash, "device_gib": round(lora_4090.device_gib, 2)}
    assert plan_stamp.parse("a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9") is None  # a git hash
    assert plan_stamp.parse(None) is None


def _plan_of(target):
    from core.planner import plan_for

    return plan_for(target.spec, target.setup, target.setup, find(target.gpu))


def test_every_format_carries_the_plan_hash(lora_4090, fsdp_70b):
    for target in (lora_4090, fsdp_70b):
        for fmt in FORMATS:
            try:
                done = export(target, fmt)
            except ExportError as err:
                assert "\n" not in str(err)
                continue
            assert target.plan_hash in done.text and done.plan_hash == target.plan_hash


def test_hf_arguments_are_the_plans_values(lora_4090):
    args = json.loads(export(lora_4090, "hf").text)
    s = lora_4090.setup
    assert args["per_device_train_batch_size"] == s.micro_batch
    assert args["gradient_accumulation_steps"] == s.grad_accum
    assert args["bf16"] is True and args["optim"] == "adamw_torch"
    assert args["activation_checkpointing"] == (s.recompute == "full")
    assert args.get("use_liger_kernel", False) == (s.loss == "fused")
    assert args["run_name"] == f"plan-{lora_4090.stamp}"


@pytest.mark.parametrize("fmt, read", [("deepspeed", deepspeed.read), ("accelerate", accelerate.read)])
def test_sharded_exports_read_back_to_the_plans_layout(fmt, read):
    target = card_plan("llama-3.1-70b", "full", H100, 8,
                       **({"zero": 3} if fmt == "deepspeed" else {"fsdp": "full"}))
    text = export(target, fmt).text
    stated = read(json.loads(text) if fmt == "deepspeed" else yaml.safe_load(text))
    lay = target.lay
    for name in ("zero", "fsdp", "offload_optimizer", "offload_params", "n_gpus", "micro_batch",
                 "grad_accum"):
        if name in stated:
            expected = getattr(lay, name) if hasattr(lay, name) else getattr(target.setup, name)
            if name == "offload_params" and lay.fsdp:  # FSDP offloads parameters with the state
                expected = lay.offload_optimizer or lay.offload_params
            assert stated[name] == expected, name
    assert {"zero", "offload_optimizer"} <= set(stated) or "fsdp" in stated


@pytest.mark.parametrize("framework, module", [("torchtune", torchtune), ("axolotl", axolotl)])
def test_framework_exports_read_back_to_the_plans_knobs(framework, module):
    for target in (card_plan("llama-3.1-8b", "lora", RTX_4090, 1, framework),
                   card_plan("llama-3.1-70b", "full", H100, 8, framework, fsdp="full")):
        stated = module.read(yaml.safe_load(export(target, framework).text))
        s = target.setup
        for name in ("micro_batch", "grad_accum", "seq_len", "precision", "recompute",
                     "activation_offload", "optimizer", "loss"):
            if name in stated:
                assert stated[name] == getattr(s, name), (framework, name)
        assert stated["micro_batch"] == s.micro_batch and stated["grad_accum"] == s.grad_accum
        assert stated.get("method", "full") == s.method


@pytest.mark.parametrize("fmt, layout, framework, message", [
    ("torchtune", {"zero": 2}, "torchtune", "FSDP2, not ZeRO"),
    ("hf", {"tp": 2}, "hf", "no tensor or context parallel"),
    ("deepspeed", {"fsdp": "full"}, "hf", "not FSDP"),
    ("axolotl", {}, "hf", "plan with --framework axolotl"),
])
def test_what_a_format_cannot_say_is_refused_in_one_line(fmt, layout, framework, message):
    spec = preset("llama-3.1-8b")
    setup = planned_setup("full", framework, Layout(n_gpus=8, **layout), micro_batch=1)
    target = Target(spec, setup, "H100 SXM", 40.0, 79.6)
    with pytest.raises(ExportError, match=message) as err:
        export(target, fmt)
    assert "\n" not in str(err.value)


def test_launch_lines_follow_the_nodes():
    spec = preset("llama-3.1-70b")
    setup = planned_setup("full", "hf", Layout(n_gpus=16, fsdp="full", gpus_per_node=8))
    text = export(Target(spec, setup, "H100 SXM", 60.0, 79.6), "launch").text
    assert "export HEADROOM_PLAN=" in text
    assert "torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$NODE_RANK" in text
    assert "--num_processes 16 --num_machines 2 --machine_rank $NODE_RANK" in text


def test_the_torchtune_line_runs_the_shipped_config():
    target = card_plan("llama-3.1-8b", "lora", RTX_4090, 1, "torchtune")
    text = export(target, "torchtune").text
    assert ("tune run lora_finetune_single_device --config llama3_1/8B_lora_single_device "
            f"batch_size={target.setup.micro_batch} ") in text
