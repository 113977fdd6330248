"""A plan as overrides of a torchtune recipe config (keys checked against torchtune 0.6.1).

torchtune merges ``key=value`` overrides over a shipped config, so the export
is the overriding keys as YAML plus the ``tune run`` line that applies them
to the matching shipped config (``llama3_1/8B_lora_single_device``...).
Distributed recipes shard with FSDP2; ZeRO plans are refused.
"""

from __future__ import annotations

import re
from typing import Any

from core.export._common import OPTIMIZER_CLASSES, lora_kinds, optimizer, require, yaml_text
from core.export.target import Export, Target
from core.memory import Setup

FILENAME = "torchtune.yaml"
FRAMEWORK = "torchtune"
CHUNKED = "torchtune.modules.loss.CEWithChunkedOutputLoss"
LOSSES = {"chunked": CHUNKED, "standard": "torch.nn.CrossEntropyLoss"}
ATTENTION_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}
MLP = frozenset({"gate", "up", "down"})
# Preset names whose torchtune config folder follows from them: llama-3.1-8b -> llama3_1/8B.
_CONFIG_NAME = re.compile(r"^(llama|qwen)-?(\d(?:\.\d)?)-(\d+(?:\.\d+)?)b$")


def render(target: Target) -> Export:
    overrides = config(target)
    recipe, base = recipe_of(target.setup), base_config(target)
    line = tune_run(target, recipe, base or "<your model's config>", overrides)
    lead = [f"recipe {recipe}; merge over torchtune's {base}" if base else
            f"recipe {recipe}; merge over your model's {recipe} config", "or run:", line]
    return Export("torchtune", yaml_text(target, overrides, lead), FILENAME, target.plan_hash)


def config(target: Target) -> dict[str, Any]:
    """The overriding keys, nested as torchtune's configs nest them."""
    s, lay = target.setup, target.lay
    _supported(target)
    out: dict[str, Any] = {
        "batch_size": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
        "dtype": "fp32" if s.precision == "fp32" or s.compute_dtype == "fp32" else "bf16",
        "enable_activation_checkpointing": s.recompute == "full",
        "enable_activation_offloading": s.activation_offload,
        "optimizer": {"_component_": optimizer(s, OPTIMIZER_CLASSES, FRAMEWORK)},
        "loss": {"_component_": LOSSES[s.loss]},
        "tokenizer": {"max_seq_len": s.seq_len},
    }
    if s.method == "full":  # only the full fine-tuning recipes step inside backward
        out["optimizer_in_bwd"] = s.optimizer_in_backward
    if s.recompute == "op":
        out.update(ac_mode="selective", ac_option="op")
    if s.method in ("lora", "qlora"):
        out["model"] = _lora(s)
    if lay.n_gpus > 1:
        out["fsdp_reshard_after_forward"] = lay.fsdp == "full"
        out["fsdp_cpu_offload"] = lay.offload_optimizer or lay.offload_params
    if lay.tp > 1:
        out["tensor_parallel_dim"] = lay.tp
    return out


def _supported(target: Target) -> None:
    s, lay = target.setup, target.lay
    require(s.precision in ("bf16", "fp32") or s.method == "qlora",
            f"torchtune trains in pure bf16 or fp32, not {s.precision}: plan with "
            "--framework torchtune")
    require(s.loss in LOSSES, "torchtune 0.6 has no fused cross-entropy: pick a plan with the "
                              "chunked loss (--framework torchtune)")
    require(s.recompute != "selective", "torchtune's selective checkpointing is per op or per "
                                        "layer, not attention-only")
    require(s.recompute != "op" or lay.n_gpus > 1, "torchtune's per-op checkpointing is in the "
                                                   "distributed recipes only")
    require(lay.pp == 1 and lay.cp == 1, "torchtune has no pipeline or context parallelism")
    require(lay.zero == 0, "torchtune shards with FSDP2, not ZeRO: plan with --fsdp")
    require(lay.n_gpus == 1 or lay.fsdp in ("full", "grad-op"),
            "torchtune's distributed recipes shard with FSDP2 (full or grad-op): plan with --fsdp")
    require(lay.tp == 1 or s.method == "full", "torchtune 0.6 runs tensor parallelism in its "
                                               "full fine-tuning recipe only")
    require(not s.optimizer_in_backward or s.method == "full", "torchtune's LoRA recipes step "
                                                               "the optimizer after backward")


def _lora(s: Setup) -> dict[str, Any]:
    kinds = lora_kinds(s.lora_targets)
    mlp = kinds & MLP
    require(not mlp or mlp == MLP, "torchtune adapts the whole MLP or none of it: LoRA targets "
                                   f"{s.lora_targets!r} have no torchtune switch")
    return {"lora_rank": s.lora_rank,
            "lora_attn_modules": [m for k, m in ATTENTION_MODULES.items() if k in kinds],
            "apply_lora_to_mlp": bool(mlp), "apply_lora_to_output": False}


def recipe_of(setup: Setup) -> str:
    kind = "lora" if setup.method in ("lora", "qlora") else "full"
    where = "single_device" if setup.layout.n_gpus == 1 else "distributed"
    return f"{kind}_finetune_{where}"


def base_config(target: Target) -> str | None:
    """The shipped config this plan's overrides go over, when the model's name says which."""
    match = _CONFIG_NAME.match(target.spec.name.lower())
    if match is None:
        return None
    family, version, size = match.groups()
    folder = family + version.replace(".", "_")
    kind = {"full": "full", "lora": "lora", "qlora": "qlora"}[target.setup.method]
    device = "_single_device" if target.lay.n_gpus == 1 else ""
    return f"{folder}/{size}B_{kind}{device}"


def tune_run(target: Target, recipe: str, base: str, overrides: dict[str, Any]) -> str:
    lay = target.lay
    launch = ""
    if lay.n_gpus > 1:
        per_node = min(lay.n_gpus, lay.gpus_per_node)
        launch = f"--nnodes {lay.nodes} --nproc_per_node {per_node} "
    args = " ".join(f"{key}={_cli(value)}" for key, value in _dotted(overrides))
    return f"tune run {launch}{recipe} --config {base} {args}"


def _dotted(data: dict[str, Any], prefix: str = ""):
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _dotted(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _cli(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def read(config: dict[str, Any]) -> dict[str, Any]:
    """Setup fields a torchtune config states."""
    out: dict[str, Any] = {}
    for field, key in (("micro_batch", "batch_size"), ("grad_accum", "gradient_accumulation_steps"),
                       ("tp", "tensor_parallel_dim")):
        if isinstance(config.get(key), int) and config[key] > 0:
            out[field] = config[key]
    if config.get("dtype") in ("bf16", "fp32"):
        out["precision"] = config["dtype"]
    if isinstance(config.get("enable_activation_checkpointing"), bool):
        out["recompute"] = "full" if config["enable_activation_checkpointing"] else "none"
    if config.get("ac_mode") == "selective" and config.get("ac_option") == "op":
        out["recompute"] = "op"
    for field, key in (("activation_offload", "enable_activation_offloading"),
                       ("optimizer_in_backward", "optimizer_in_bwd")):
        if isinstance(config.get(key), bool):
            out[field] = config[key]
    out.update(_read_components(config))
    if config.get("fsdp_cpu_offload") is True:
        out.update(offload_optimizer=True, offload_params=True)
    if config.get("fsdp_reshard_after_forward") is False:
        out["fsdp"] = "grad-op"
    return out


def _read_components(config: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    optimizer_class = _component(config.get("optimizer"))
    names = {path: name for name, path in OPTIMIZER_CLASSES.items()}
    if optimizer_class in names:
        out["optimizer"] = names[optimizer_class]
    loss = _component(config.get("loss"))
    if loss:
        out["loss"] = "chunked" if "Chunked" in loss else "standard"
    tokenizer = config.get("tokenizer")
    if isinstance(tokenizer, dict) and isinstance(tokenizer.get("max_seq_len"), int):
        out["seq_len"] = tokenizer["max_seq_len"]
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    builder = (_component(model) or "").rsplit(".", 1)[-1]
    if builder.startswith(("lora_", "qlora_")) or "lora_rank" in model:
        out["method"] = "qlora" if builder.startswith("qlora_") else "lora"
        if isinstance(model.get("lora_rank"), int):
            out["lora_rank"] = model["lora_rank"]
    return out


def _component(section: Any) -> str | None:
    return section.get("_component_") if isinstance(section, dict) else None
