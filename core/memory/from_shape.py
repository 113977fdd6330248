"""A recorded run's :class:`RunShape` turned into the memory model's inputs.

Readers fill what logs state, in the logs' own vocabulary (``adamw_torch``,
``full_shard``, ``flash_attention_2``, ``megatron-lm``); this maps it onto a
:class:`ModelSpec` and a :class:`Setup`, taking the architecture from the
shape's own fields, else from a preset the model name matches, else from the
parameter count. Whatever the shape lacks gets the common default, and the
list of defaults is returned so a fit can tell a guess from a fact.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.memory.frameworks import canonical
from core.memory.frameworks import framework as framework_preset
from core.memory.setup import Layout, Setup
from core.memory.spec import ModelSpec
from core.shape import LOSSES, RECOMPUTE, RunShape


class ShapeIncomplete(ValueError):
    """The shape says too little to predict the run's memory."""


_FSDP = {"full_shard": "full", "fsdp": "full", "full": "full", "shard_grad_op": "grad-op",
         "grad-op": "grad-op", "hybrid_shard": "hybrid", "hybrid": "hybrid"}


def inputs_from_shape(shape: RunShape) -> tuple[ModelSpec, Setup, list[str]]:
    """(model, setup, fields that were defaulted) for a stored run's shape."""
    shape = _with_unsaid_defaults(shape)
    spec = _spec(shape)
    defaulted = [name for name in ("micro_batch", "seq_len", "precision", "n_gpus")
                 if getattr(shape, name) is None]
    method = _method(shape)
    setup = Setup(
        method=method,
        precision=_precision(shape, method),
        optimizer=_optimizer(shape.optimizer, method),
        lora_rank=shape.lora_rank or 16,
        lora_targets=_targets(shape.lora_targets),
        micro_batch=shape.micro_batch or 1,
        seq_len=shape.seq_len or 2048,
        grad_accum=shape.grad_accum or 1,
        recompute=shape.recompute if shape.recompute in RECOMPUTE else "none",
        attention=shape.attention if shape.attention in ("eager", "sdpa", "flash") else "sdpa",
        loss=shape.loss if shape.loss in LOSSES else "standard",
        compile=bool(shape.compile), activation_offload=bool(shape.activation_offload),
        optimizer_in_backward=bool(shape.optimizer_in_backward) and (shape.grad_accum or 1) == 1,
        framework=framework(shape.framework),
        layout=_layout(shape),
    )
    return spec, setup, defaulted


def stated_fields(shape: RunShape) -> dict[str, Any]:
    """Setup and layout fields for only what ``shape`` states, in the memory model's words.

    What it leaves out is for a framework's defaults to fill
    (:func:`core.sizing.planned_setup`), not the common defaults above.
    """
    known = shape.known()
    method = _method(shape)
    out: dict[str, Any] = {"method": method} if known.keys() & _METHOD_FACTS else {}
    if "precision" in known or method == "qlora":
        out["precision"] = _precision(shape, method)
    if "optimizer" in known:
        out["optimizer"] = _optimizer(shape.optimizer, method)
    out.update({name: known[name] for name in ("micro_batch", "seq_len", "grad_accum", "lora_rank")
                if name in known})
    if "lora_targets" in known:
        out["lora_targets"] = _targets(shape.lora_targets)
    if known.get("recompute") in RECOMPUTE:
        out["recompute"] = known["recompute"]
    if known.get("attention") in ("eager", "sdpa", "flash"):
        out["attention"] = known["attention"]
    if known.keys() & _LAYOUT_FACTS:
        layout = _layout(shape)
        out.update({name: getattr(layout, name) for name in _LAYOUT_FIELDS
                    if name != "n_gpus" or "n_gpus" in known})
    return out


_METHOD_FACTS = frozenset({"method", "quantization", "lora_rank"})
_LAYOUT_FACTS = frozenset({"n_gpus", "zero_stage", "fsdp", "tp", "pp", "sequence_parallel",
                           "cpu_offload"})
_LAYOUT_FIELDS = ("n_gpus", "zero", "fsdp", "tp", "pp", "sequence_parallel", "offload_optimizer",
                  "offload_params")


def _with_unsaid_defaults(shape: RunShape) -> RunShape:
    """The shape with the facts its framework's logs only leave unsaid at their default."""
    unsaid = framework_preset(shape.framework).unsaid
    if not unsaid:
        return shape
    filled = RunShape.from_dict(shape.to_dict())
    filled.update(unsaid, "framework default", overwrite=False)
    return filled


def missing_facts(shape: RunShape) -> list[str]:
    """Facts that move memory the shape does not state, so a fit cannot use the run.

    The method and the recompute mode always matter; on several GPUs, whether
    and how state was sharded (ZeRO stage or FSDP); under DeepSpeed or
    sharding, whether anything was offloaded to the CPU.
    """
    said = {**framework_preset(shape.framework).unsaid, **shape.known()}
    missing = [name for name in ("method", "recompute") if said.get(name) is None]
    sharded = bool(said.get("zero_stage")) or bool(said.get("fsdp"))
    if (said.get("n_gpus") or 1) > 1 and said.get("zero_stage") is None and not said.get("fsdp"):
        missing.append("zero_stage")
    deepspeed = canonical(shape.framework) == "deepspeed"
    if (sharded or deepspeed) and said.get("cpu_offload") is None:
        missing.append("cpu_offload")
    return missing


def experiment(shape: RunShape) -> str:
    """Runs of one model trained one way form an experiment: calibration holds them out
    together."""
    model = (shape.model or "").rstrip("/").rsplit("/", 1)[-1]
    if not model and shape.n_params:
        model = f"{shape.n_params / 1e9:.2f}B"
    return f"{model or 'unknown model'} / {shape.method or 'unknown method'}"


def framework(name: str | None) -> str:
    """A framework as readers write it, as the presets and calibration groups name it."""
    return canonical(name)


def _spec(shape: RunShape) -> ModelSpec:
    from core.models import ModelError, from_params, preset, spec_from_config

    if shape.n_layers and shape.hidden and shape.n_heads and shape.vocab:
        config = {
            "model_type": shape.family or _guess_family(shape), "num_hidden_layers": shape.n_layers,
            "hidden_size": shape.hidden, "num_attention_heads": shape.n_heads,
            "num_key_value_heads": shape.n_kv_heads or shape.n_heads, "vocab_size": shape.vocab,
            "intermediate_size": shape.intermediate or 4 * shape.hidden,
            "tie_word_embeddings": bool(shape.tied_embeddings),
        }
        if shape.head_dim:
            config["head_dim"] = shape.head_dim
        if shape.n_experts:
            config.update(num_local_experts=shape.n_experts,
                          num_experts_per_tok=shape.n_active_experts or 2)
        spec = spec_from_config(config, shape.model or "recorded model", None, "run shape")
        return spec.with_params(shape.n_params) if shape.n_params else spec
    if shape.model:
        try:
            spec = preset(shape.model.rstrip("/").rsplit("/", 1)[-1])
            return replace(spec, n_params=shape.n_params or spec.n_params)
        except ModelError:
            pass
    if shape.n_params:
        return from_params(shape.n_params)
    raise ShapeIncomplete("no architecture: the run states neither layers/hidden/heads/vocab, "
                          "a known model name, nor a parameter count")


def _guess_family(shape: RunShape) -> str:
    """Megatron and custom logs name no family: a 4h MLP is GPT-style, anything else SwiGLU."""
    if shape.intermediate and shape.intermediate != 4 * shape.hidden:
        return "llama"
    return "gpt2" if shape.intermediate == 4 * (shape.hidden or 0) else "llama"


def _method(shape: RunShape) -> str:
    if shape.method in ("full", "lora", "qlora", "inference"):
        if shape.method == "lora" and shape.quantization in ("nf4", "fp4", "int8", "int4"):
            return "qlora"
        return shape.method
    if shape.quantization in ("nf4", "fp4", "int8", "int4"):
        return "qlora"
    return "lora" if shape.lora_rank else "full"


def _precision(shape: RunShape, method: str) -> str:
    if method == "qlora":
        return "int8" if shape.quantization == "int8" else "nf4"
    precision = shape.precision or "mixed-bf16"
    if method == "inference" and precision.startswith("mixed-"):
        return precision.removeprefix("mixed-")
    return precision if precision not in ("int8", "nf4") else "mixed-bf16"


def _optimizer(name: str | None, method: str) -> str:
    if method == "inference":
        return "none"
    key = (name or "adamw").lower().replace("_", "-")
    if "8bit" in key or "8-bit" in key:
        return "paged-adamw-8bit" if "paged" in key else "adamw-8bit"
    if "paged" in key and "adam" in key:  # bitsandbytes' 32-bit paged AdamW
        return "paged-adamw"
    if key.startswith("adam") or key.startswith("fused"):
        return "adamw"
    for known in ("adafactor", "sgd", "none"):
        if key.startswith(known):
            return "sgd-momentum" if known == "sgd" else known
    return "adamw"


def _targets(targets: list[str] | None) -> str:
    if not targets:
        return "all-linear"
    names = {str(t).split(".")[-1] for t in targets}
    if names & {"all-linear", "all_linear", "gate_proj", "up_proj", "down_proj", "fc1", "w1"}:
        return "all-linear"
    if names <= {"q_proj", "v_proj", "query", "value", "q", "v"}:
        return "qv"
    return "attention"


def _layout(shape: RunShape) -> Layout:
    fsdp = _FSDP.get((shape.fsdp or "").strip().lower()) if shape.fsdp else None
    zero = shape.zero_stage if shape.zero_stage in (0, 1, 2, 3) and not fsdp else 0
    offload = bool(shape.cpu_offload)
    sharded_params = zero == 3 or fsdp in ("full", "hybrid")
    model_parallel = (shape.tp or 1) * (shape.pp or 1) * (shape.cp or 1)
    n_gpus = max(shape.n_gpus or 1, model_parallel)
    n_gpus += -n_gpus % model_parallel  # a whole number of model replicas
    return Layout(
        n_gpus=n_gpus, zero=zero, fsdp=fsdp, tp=shape.tp or 1, pp=shape.pp or 1, cp=shape.cp or 1,
        sequence_parallel=bool(shape.sequence_parallel) and (shape.tp or 1) > 1,
        offload_optimizer=offload and (zero >= 1 or fsdp is not None),
        offload_params=offload and sharded_params,
    )
