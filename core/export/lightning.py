"""A plan as a Lightning ``Trainer(...)`` snippet with its strategy (Lightning 2.x).

GPUs and nodes, the strategy the layout needs (DDP, ``FSDPStrategy`` with its
sharding, CPU offload and per-block checkpointing, ``DeepSpeedStrategy`` with
its ZeRO stage and offload, ``ModelParallelStrategy`` for tensor
parallelism), precision, accumulation and clipping. The micro batch and the
optimizer belong to the DataLoader and ``configure_optimizers``: comments say
which. Headroom's callback carries the plan's stamp into the run's log.
"""

from __future__ import annotations

from core.export._common import OPTIMIZER_CLASSES, comment, decoder_layer, no_pipeline, require
from core.export.target import DEFAULT_CLIP, Export, Target
from core.memory.frameworks import framework as framework_preset

FILENAME = "lightning_trainer.py"
PRECISIONS = {"mixed-bf16": "bf16-mixed", "mixed-fp16": "16-mixed", "bf16": "bf16-true",
              "fp16": "16-true", "fp32": "32-true", "fp8": "transformer-engine"}
SHARDING = {"full": "FULL_SHARD", "grad-op": "SHARD_GRAD_OP", "hybrid": "HYBRID_SHARD"}
GENERIC_BLOCK = ("torch.nn", "TransformerDecoderLayer")


def render(target: Target) -> Export:
    no_pipeline(target, "Lightning")
    require(target.lay.cp == 1, "Lightning's strategies take no context parallel degree")
    require(not target.setup.optimizer_in_backward, "Lightning steps the optimizer after "
                                                    "backward")
    s = target.setup
    imports, strategy = _strategy(target)
    if s.method == "qlora":
        imports += ["import torch", "from lightning.pytorch.plugins import BitsandbytesPrecision"]
    lines = [*imports, "", "from tracker.record import LightningCallback", ""]
    if strategy:
        lines += [f"strategy = {strategy}"]
    lines += ["trainer = L.Trainer(", *[f"    {arg}," for arg in _arguments(target, strategy)],
              ")"]
    return Export("lightning", comment(target.header() + _comments(target)) + "\n".join(lines)
                  + "\n", FILENAME, target.plan_hash, (f"sequence length {s.seq_len}: pack or "
                                                      "truncate your DataLoader's samples to it",))


def _strategy(target: Target) -> tuple[list[str], str]:
    lay = target.lay
    imports = ["import lightning as L"]
    if lay.tp > 1:
        require(not lay.zero and not lay.offload_optimizer, "Lightning's ModelParallelStrategy "
                                                            "has no ZeRO or offload")
        imports.append("from lightning.pytorch.strategies import ModelParallelStrategy")
        return imports, (f"ModelParallelStrategy(data_parallel_size={lay.dp}, "
                         f"tensor_parallel_size={lay.tp})")
    if lay.fsdp:
        module, block = decoder_layer(target.spec) or GENERIC_BLOCK
        imports += ["from lightning.pytorch.strategies import FSDPStrategy",
                    f"from {module} import {block}"]
        checkpointing = (f", activation_checkpointing_policy={{{block}}}"
                         if target.setup.recompute == "full" else "")
        return imports, (f'FSDPStrategy(sharding_strategy="{SHARDING[lay.fsdp]}", '
                         f"cpu_offload={lay.offload_optimizer or lay.offload_params}, "
                         f"auto_wrap_policy={{{block}}}{checkpointing})")
    if lay.zero:
        imports.append("from lightning.pytorch.strategies import DeepSpeedStrategy")
        bucket = framework_preset(target.setup.framework).zero_bucket or target.spec.hidden ** 2
        return imports, (f"DeepSpeedStrategy(stage={lay.zero}, "
                         f"offload_optimizer={lay.offload_optimizer}, "
                         f"offload_parameters={lay.offload_params}, "
                         f"reduce_bucket_size={int(bucket)})")
    return imports, '"ddp"' if lay.n_gpus > 1 else ""


def _arguments(target: Target, strategy: str) -> list[str]:
    s, lay = target.setup, target.lay
    per_node = min(lay.n_gpus, lay.gpus_per_node)
    args = ['accelerator="gpu"', f"devices={per_node}", f"num_nodes={lay.nodes}"]
    if strategy:
        args.append("strategy=strategy")
    if s.method == "qlora":
        require(s.precision == "nf4" and s.compute_dtype != "fp32",
                "Lightning's bitsandbytes plugin quantises to nf4 with a 16-bit compute dtype")
        mode = "nf4-dq" if s.double_quant else "nf4"
        dtype = {"bf16": "bfloat16", "fp16": "float16"}[s.compute_dtype]
        args.append(f'plugins=[BitsandbytesPrecision(mode="{mode}", dtype=torch.{dtype})]')
    else:
        args.append(f'precision="{PRECISIONS[s.precision]}"')
    args.append(f"accumulate_grad_batches={s.grad_accum}")
    if not lay.fsdp:  # FSDP clips inside the module (Lightning refuses gradient_clip_val)
        args.append(f"gradient_clip_val={DEFAULT_CLIP}")
    args.append(f'callbacks=[LightningCallback(plan="{target.stamp}")]')
    return args


def _comments(target: Target) -> list[str]:
    s, lay = target.setup, target.lay
    lines = [f"micro batch {s.micro_batch}: DataLoader(..., batch_size={s.micro_batch})",
             f"optimizer {s.optimizer}: {OPTIMIZER_CLASSES.get(s.optimizer, s.optimizer)} in "
             "configure_optimizers()"]
    if s.recompute != "none" and not (lay.fsdp and s.recompute == "full"):
        lines.append(f"recompute {s.recompute}: activation checkpointing in your module "
                     "(model.gradient_checkpointing_enable() for HF models)")
    if s.method in ("lora", "qlora"):
        lines.append(f"LoRA rank {s.lora_rank} on {s.lora_targets}: wrap the model with PEFT in "
                     "configure_model()")
    if s.loss == "fused":
        lines.append("fused loss: Liger's fused linear cross-entropy in training_step")
    if s.activation_offload:
        lines.append("activation offload: torch.autograd.graph.save_on_cpu() around forward")
    if lay.fsdp and lay.offload_optimizer and not lay.offload_params:
        lines.append("FSDP's CPU offload moves parameters too: less GPU memory and slower steps "
                     "than the plan says")
    return lines
