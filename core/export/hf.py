"""A plan as Hugging Face ``TrainingArguments`` keyword arguments (transformers 5.x JSON).

``TrainingArguments(**json.load(f))`` takes the file as it is. FSDP uses
``fsdp_config`` version 2 (FSDP2); ZeRO plans carry their DeepSpeed config
inline under ``deepspeed``. What TrainingArguments cannot hold (LoRA, 4-bit
loading, the sequence length) comes back as notes. ``run_name`` is
``plan-<stamp>``: the HF recorder links the run to the plan from it.
"""

from __future__ import annotations

import re
from typing import Any

from core.export import deepspeed
from core.export._common import (
    HF_OPTIMIZERS,
    decoder_layer,
    half,
    json_text,
    lora_modules,
    no_pipeline,
    no_tensor_parallel,
    optimizer,
    require,
)
from core.export.target import DEFAULT_CLIP, Export, Target

FILENAME = "training_args.json"
FRAMEWORK = "The HF Trainer"


def render(target: Target) -> Export:
    return Export("hf", json_text(arguments(target)), FILENAME, target.plan_hash,
                  _notes(target))


def arguments(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    no_pipeline(target, FRAMEWORK)
    no_tensor_parallel(target, FRAMEWORK)
    require(s.recompute in ("none", "full"), f"{FRAMEWORK} checkpoints whole layers only: "
                                             f"recompute {s.recompute} has no switch")
    require(s.loss != "chunked", f"{FRAMEWORK} has no chunked loss (export torchtune)")
    require(not s.activation_offload, f"{FRAMEWORK} has no activation offload (export axolotl "
                                      "or torchtune)")
    require(not s.optimizer_in_backward, f"{FRAMEWORK} steps the optimizer after backward")
    require(lay.fsdp != "hybrid", "transformers' FSDP2 has no hybrid shard: export accelerate")
    args: dict[str, Any] = {
        "output_dir": f"{_slug(target.spec.name)}-plan-{target.plan_hash}",
        "run_name": f"plan-{target.stamp}",
        "per_device_train_batch_size": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
        "max_grad_norm": DEFAULT_CLIP,
        "optim": optimizer(s, HF_OPTIMIZERS, FRAMEWORK),
    }
    kind = half(s)
    if kind:
        args[kind] = True
    if s.optimizer == "sgd-momentum":
        args["optim_args"] = "momentum=0.9"
    if s.loss == "fused":
        args["use_liger_kernel"] = True  # Liger's fused linear cross-entropy
    if lay.fsdp:
        args.update(fsdp=True, fsdp_config=_fsdp(target))
    else:
        args["activation_checkpointing"] = s.recompute == "full"
    if lay.zero:
        args["deepspeed"] = deepspeed.settings(target)[0]
    return args


def _fsdp(target: Target) -> dict[str, Any]:
    s, lay = target.setup, target.lay
    config: dict[str, Any] = {
        "version": 2,
        "reshard_after_forward": lay.fsdp == "full",  # grad-op keeps the gathered weights
        "cpu_offload": lay.offload_optimizer or lay.offload_params,
        "activation_checkpointing": s.recompute == "full",
        "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
    }
    layer = decoder_layer(target.spec)
    if layer:
        config["transformer_layer_cls_to_wrap"] = [layer[1]]
    return config


def _notes(target: Target) -> tuple[str, ...]:
    s, lay = target.setup, target.lay
    notes = [f"sequence length {s.seq_len}: pack or truncate to it (your tokenizer's max_length)"]
    if s.method in ("lora", "qlora"):
        notes.append(f"LoRA: peft.LoraConfig(r={s.lora_rank}, target_modules="
                     f"{lora_modules(s)})")
    if s.method == "qlora":
        notes.append(f"4-bit base: BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="
                     f"'{s.quant_type}', bnb_4bit_use_double_quant={s.double_quant}, "
                     f"bnb_4bit_compute_dtype=torch.{_torch_dtype(s.compute_dtype)})")
    elif s.precision in ("bf16", "fp16"):
        notes.append(f"load the model in {s.precision} (dtype=torch.{_torch_dtype(s.precision)}): "
                     "the plan keeps no fp32 master copy")
    if s.attention != "sdpa":
        notes.append(f"attention: from_pretrained(..., attn_implementation="
                     f"'{_ATTENTION[s.attention]}')")
    if lay.fsdp and lay.offload_optimizer and not lay.offload_params:
        notes.append("FSDP's CPU offload moves parameters and gradients too, not only the "
                     "optimizer state: less GPU memory and slower steps than the plan says")
    return tuple(notes)


_ATTENTION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}


def _torch_dtype(kind: str) -> str:
    return {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[kind]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "run"
