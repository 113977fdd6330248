"""Training-setup facts from argument dicts written by real frameworks."""

from __future__ import annotations

import json

import pytest

from core.train_args import shape_fields
from tracker.readers._common import load_yaml


def test_hf_training_arguments_as_the_trainer_dumps_them():
    from transformers import TrainingArguments

    args = TrainingArguments(
        output_dir="out", per_device_train_batch_size=3, gradient_accumulation_steps=4,
        activation_checkpointing=True, optim="adamw_torch", use_cpu=True, report_to=[],
    ).to_dict()
    fields = shape_fields(args)
    assert fields["micro_batch"] == 3
    assert fields["grad_accum"] == 4
    assert fields["recompute"] == "full"
    assert fields["optimizer"] == "adamw"
    assert "precision" not in fields  # neither bf16 nor fp16 was switched on


def test_megatron_arguments():
    args = {
        "micro_batch_size": 2, "global_batch_size": 80, "seq_length": 8192, "bf16": True,
        "fp16": False, "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1,
        "num_layers": 16, "hidden_size": 2048, "num_attention_heads": 32,
        "group_query_attention": True, "num_query_groups": 8, "recompute_granularity": None,
        "world_size": 8, "optimizer": "adam", "sequence_parallel": True,
    }
    fields = shape_fields(args)
    assert fields["micro_batch"] == 2 and fields["global_batch"] == 80
    assert fields["seq_len"] == 8192 and fields["precision"] == "mixed-bf16"
    assert fields["tp"] == 2 and fields["pp"] == 1 and fields["n_gpus"] == 8
    assert fields["n_heads"] == 32 and fields["n_kv_heads"] == 8
    assert fields["recompute"] == "none" and fields["sequence_parallel"] is True


@pytest.mark.parametrize(
    ("flag", "precision"),
    [("bf16-mixed", "mixed-bf16"), ("16-mixed", "mixed-fp16"), ("bf16-true", "bf16"),
     (32, "fp32"), ("32-true", "fp32")],
)
def test_lightning_precision_flags(flag, precision):
    assert shape_fields({"precision": flag})["precision"] == precision


def test_nested_lightning_hparams_from_the_corpus(corpus):
    path = corpus / "lightning/BvoJa__GPTTT/lightning_logs/version_0/hparams.yaml"
    fields = shape_fields(load_yaml(path))
    assert fields["micro_batch"] == 64 and fields["seq_len"] == 256
    assert (fields["n_layers"], fields["hidden"], fields["n_heads"]) == (6, 384, 6)
    assert fields["n_gpus"] == 2


def test_python_object_tags_are_read_as_plain_data(corpus):
    # hparams.yaml with a !!python/object dump: read its fields, construct nothing.
    path = corpus / "lightning/LiuTaowen-Tony__xKV/lightning_logs/version_0/hparams.yaml"
    data = load_yaml(path)
    assert data["config"]["hidden_dim"] == 2048  # the object's __dict__, unwrapped
    json.dumps(data)  # storable as the run's config
    assert shape_fields(data)["n_layers"] == 16


def test_states_nothing_for_unrelated_keys():
    assert shape_fields({"lr": 3e-4, "seed": 1, "devices": "auto", "batch_size": 0}) == {}


def test_the_memory_knobs_frameworks_state_in_their_configs():
    hf = shape_fields({"torch_compile": True, "use_liger_kernel": True,
                       "optim": "paged_adamw_32bit", "gradient_checkpointing": True})
    assert hf["compile"] is True and hf["loss"] == "fused" and hf["recompute"] == "full"
    assert hf["optimizer"] == "paged_adamw"
    torchtune = shape_fields({
        "optimizer": {"_component_": "bitsandbytes.optim.PagedAdamW8bit", "lr": 2e-5},
        "optimizer_in_bwd": True, "enable_activation_checkpointing": True,
        "enable_activation_offloading": False, "compile": False,
        "loss": {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"}})
    assert torchtune["optimizer"] == "paged_adamw_8bit" and torchtune["optimizer_in_backward"]
    assert torchtune["recompute"] == "full" and torchtune["activation_offload"] is False
    assert torchtune["loss"] == "chunked" and torchtune["compile"] is False
    torchtitan = shape_fields({"activation_checkpoint": {"mode": "selective",
                                                         "selective_ac_option": "op"},
                               "parallelism": {"context_parallel_degree": 2}})
    assert torchtitan["recompute"] == "op" and torchtitan["cp"] == 2
    assert shape_fields({"disable_gradient_checkpointing": True})["recompute"] == "none"
