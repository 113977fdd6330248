"""What several exporters share: comment headers, YAML and JSON text, names frameworks use.

pyyaml is imported inside :func:`yaml_text`, so importing an exporter stays cheap.
"""

from __future__ import annotations

import json
from typing import Any

from core.export.target import ExportError, Target
from core.memory import ModelSpec, Setup
from core.memory.spec import lora_kinds

# The transformer block each HF model family wraps for FSDP and checkpoints per layer
# (transformers 5.x modelling modules; tests import every one).
DECODER_LAYERS = {
    "llama": ("transformers.models.llama.modeling_llama", "LlamaDecoderLayer"),
    "mistral": ("transformers.models.mistral.modeling_mistral", "MistralDecoderLayer"),
    "mixtral": ("transformers.models.mixtral.modeling_mixtral", "MixtralDecoderLayer"),
    "qwen2": ("transformers.models.qwen2.modeling_qwen2", "Qwen2DecoderLayer"),
    "qwen3": ("transformers.models.qwen3.modeling_qwen3", "Qwen3DecoderLayer"),
    "qwen3_moe": ("transformers.models.qwen3_moe.modeling_qwen3_moe", "Qwen3MoeDecoderLayer"),
    "gemma2": ("transformers.models.gemma2.modeling_gemma2", "Gemma2DecoderLayer"),
    "gemma3_text": ("transformers.models.gemma3.modeling_gemma3", "Gemma3DecoderLayer"),
    "phi3": ("transformers.models.phi3.modeling_phi3", "Phi3DecoderLayer"),
    "gpt2": ("transformers.models.gpt2.modeling_gpt2", "GPT2Block"),
    "falcon": ("transformers.models.falcon.modeling_falcon", "FalconDecoderLayer"),
    "opt": ("transformers.models.opt.modeling_opt", "OPTDecoderLayer"),
    "deepseek_v2": ("transformers.models.deepseek_v2.modeling_deepseek_v2", "DeepseekV2DecoderLayer"),
    "deepseek_v3": ("transformers.models.deepseek_v3.modeling_deepseek_v3", "DeepseekV3DecoderLayer"),
}
# HF TrainingArguments' optim names (axolotl takes the same).
HF_OPTIMIZERS = {"adamw": "adamw_torch", "adamw-8bit": "adamw_bnb_8bit",
                 "paged-adamw": "paged_adamw_32bit", "paged-adamw-8bit": "paged_adamw_8bit",
                 "sgd": "sgd", "sgd-momentum": "sgd", "adafactor": "adafactor"}
# Optimizer classes for frameworks that build the optimizer from a class path.
OPTIMIZER_CLASSES = {"adamw": "torch.optim.AdamW", "adamw-8bit": "bitsandbytes.optim.AdamW8bit",
                     "paged-adamw": "bitsandbytes.optim.PagedAdamW",
                     "paged-adamw-8bit": "bitsandbytes.optim.PagedAdamW8bit",
                     "sgd": "torch.optim.SGD", "sgd-momentum": "torch.optim.SGD",
                     "adafactor": "transformers.optimization.Adafactor"}
HUB = "https://huggingface.co/"
LORA_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj",
                "up": "up_proj", "down": "down_proj"}


def comment(lines: list[str], mark: str = "#") -> str:
    return "".join(f"{mark} {line}\n" for line in lines)


def yaml_text(target: Target, data: dict[str, Any], lead: list[str] = ()) -> str:
    """The plan's header as comments, ``lead`` lines, then ``data`` in block YAML."""
    import yaml

    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
    return comment(target.header() + list(lead)) + body


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ExportError(message)


def no_pipeline(target: Target, framework: str) -> None:
    require(target.lay.pp == 1, f"{framework} has no pipeline parallelism: this plan uses PP"
                                f"{target.lay.pp}; export deepspeed or launch, or pick a plan "
                                "without PP (--plan N)")


def no_tensor_parallel(target: Target, framework: str) -> None:
    lay = target.lay
    require(lay.tp == 1 and lay.cp == 1, f"{framework} takes no tensor or context parallel "
                                         f"degree: this plan uses {lay.describe()}; export "
                                         "accelerate or axolotl, or pick another plan (--plan N)")


def half(setup: Setup) -> str | None:
    """The 16-bit type the run computes in ("bf16", "fp16"), None for fp32."""
    if setup.method in ("qlora", "inference") or setup.precision in ("nf4", "int8"):
        return None if setup.compute_dtype == "fp32" else setup.compute_dtype
    for kind in ("bf16", "fp16"):
        if setup.precision.endswith(kind):
            return kind
    if setup.precision == "fp8":
        raise ExportError("fp8 training is a Transformer Engine / torchao setting no config "
                          "switch here expresses: pick a bf16 plan (--plan N)")
    return None


def optimizer(setup: Setup, names: dict[str, str], framework: str) -> str:
    name = names.get(setup.optimizer)
    require(name is not None, f"{framework} has no {setup.optimizer} optimizer")
    return name


def decoder_layer(spec: ModelSpec) -> tuple[str, str] | None:
    """(module, class) of the model's transformer block, when the family is known."""
    return DECODER_LAYERS.get(spec.family)


def model_id(spec: ModelSpec) -> str:
    """The Hugging Face repository of a preset (from its config's URL), else the model's name."""
    if spec.source.startswith(HUB):
        return "/".join(spec.source.removeprefix(HUB).split("/")[:2])
    return spec.name


def lora_modules(setup: Setup) -> list[str]:
    """PEFT target module names for the setup's LoRA targets (Llama-style names)."""
    kinds = lora_kinds(setup.lora_targets)
    return [name for kind, name in LORA_MODULES.items() if kind in kinds]
