"""HFCallback on real HF Trainer runs of a tiny GPT-2 on the CPU (full and LoRA), and a crash."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.producers import tiny_gpt2_config, token_dataset, train_hf
from tracker.ingest import ingest
from tracker.record import HFCallback

pytestmark = pytest.mark.slow

THROUGHPUT = {
    "step_time_s",
    "samples_per_s",
    "tokens_per_s",
    "samples_seen",
    "tokens_seen",
    "batch_size",
}


def records(path: Path, key: str) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if key in r]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> Path:
    return train_hf(tmp_path_factory.mktemp("hf") / "full", callbacks=[HFCallback()])


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory) -> Path:
    """LoRA, accumulation, recompute, HF's token count, an OOM that auto_find_batch_size retries."""
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

    class OneOOM(TrainerCallback):
        raised = False

        def on_step_begin(self, args, state, control, **kwargs):
            if not self.raised:
                OneOOM.raised = True
                raise __import__("torch").OutOfMemoryError(
                    "CUDA out of memory. Tried to allocate 1 GiB"
                )

    out = tmp_path_factory.mktemp("hf") / "lora"
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True)
    model = get_peft_model(GPT2LMHeadModel(tiny_gpt2_config()), lora)
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=6,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        learning_rate=5e-3,
        logging_steps=2,
        save_steps=3,
        eval_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        include_num_input_tokens_seen="all",
        auto_find_batch_size=True,
        activation_checkpointing=True,
        activation_checkpointing_kwargs={"use_reentrant": False},
    )
    Trainer(
        model=model,
        args=args,
        train_dataset=token_dataset(64),
        callbacks=[HFCallback(name="lora-run"), OneOOM()],
    ).train()
    return out


def test_a_trainer_run_ingests_with_every_field(store, full_run):
    report = ingest(store, [full_run])
    assert [(r.status, r.format) for r in report.results] == [("ingested", "headroom_jsonl")]
    run = store.run(report.results[0].run_id)
    assert run.status == "finished" and run.name == "full"
    assert {"loss", "lr", "grad_norm", "epoch", "eval_loss", *THROUGHPUT} <= set(run.series)
    assert not {"mem_peak_gib", "mem_reserved_gib"} & set(run.series)  # no GPU: absent, not zero
    history = json.loads((full_run / "trainer_state.json").read_text())["log_history"]
    hf_loss = [(e["step"], e["loss"]) for e in history if "loss" in e]
    loss = store.series(run.id, "loss")
    assert list(zip(loss.steps.tolist(), loss.values.tolist(), strict=True)) == hf_loss
    assert store.series(run.id, "tokens_seen").values[-1] == 24 * 4 * 16
    assert store.series(run.id, "eval_loss").steps.tolist() == [8, 16, 24]
    assert store.details(run.id).final_values["train_loss"] == pytest.approx(history[-1]["train_loss"])


def test_the_header_states_the_shape(store, full_run):
    from transformers import GPT2LMHeadModel

    run = store.run(ingest(store, [full_run]).results[0].run_id)
    n_params = GPT2LMHeadModel(tiny_gpt2_config()).num_parameters()
    shape = run.shape
    assert (shape.n_params, shape.n_trainable_params, shape.method) == (n_params, n_params, "full")
    assert (shape.family, shape.n_layers, shape.hidden, shape.n_heads, shape.vocab) == (
        "gpt2",
        2,
        32,
        2,
        64,
    )
    assert (shape.micro_batch, shape.grad_accum, shape.global_batch, shape.seq_len) == (4, 1, 4, 16)
    assert (shape.precision, shape.optimizer, shape.attention, shape.recompute) == (
        "fp32",
        "adamw",
        "sdpa",
        "none",
    )
    assert shape.framework == "transformers" and shape.n_gpus is None  # a CPU run
    config = store.details(run.id).config
    assert config["training_args"]["max_steps"] == 24 and config["versions"]["transformers"]
    assert "since the previous record" in config["recorder"]["memory"]


def test_each_checkpoint_is_recorded_with_its_metrics(full_run):
    saved = records(full_run / "headroom.jsonl", "checkpoint")
    assert [(r["step"], r["checkpoint"]["path"]) for r in saved] == [
        (8, "checkpoint-8"),
        (16, "checkpoint-16"),
        (24, "checkpoint-24"),
    ]
    evals = {r["step"]: r["eval_loss"] for r in records(full_run / "headroom.jsonl", "eval_loss")}
    for r in saved:
        assert (full_run / r["checkpoint"]["path"] / "trainer_state.json").is_file()
        assert set(r["checkpoint"]["metrics"]) == {"loss", "epoch", "eval_loss"}
        assert r["checkpoint"]["metrics"]["eval_loss"] == evals[r["step"]]


def test_a_lora_run_records_the_method_and_hf_token_count(store, lora_run):
    run = store.run(ingest(store, [lora_run]).results[0].run_id)
    shape = run.shape
    assert (shape.method, shape.lora_rank, shape.lora_alpha, shape.lora_targets) == (
        "lora",
        4,
        8,
        ["c_attn"],
    )
    assert 0 < shape.n_trainable_params < shape.n_params
    assert (shape.grad_accum, shape.recompute) == (2, "full")
    assert run.name == "lora-run" and store.details(run.id).config["peft"]["r"] == 4
    history = json.loads((lora_run / "checkpoint-6" / "trainer_state.json").read_text())[
        "log_history"
    ]
    hf_tokens = [e["num_input_tokens_seen"] for e in history if "loss" in e]
    assert store.series(run.id, "tokens_seen").values.tolist() == hf_tokens


def test_an_oom_that_auto_find_batch_size_retries_is_a_restart(store, lora_run):
    run_id = ingest(store, [lora_run]).results[0].run_id
    [restart] = store.events(run_id)
    micro = restart.data["micro_batch"]
    assert restart.kind == "restart" and micro < 8  # accelerate shrank the batch after the OOM
    run = store.run(run_id)
    assert run.status == "finished"
    assert (run.shape.micro_batch, run.shape.global_batch) == (micro, 2 * micro)
    assert (
        store.series(run_id, "batch_size").values[0] == 2 * micro
    )  # measured: 2 micro batches a step


def test_an_uncaught_oom_is_the_final_event_before_the_process_dies(store, tmp_path):
    script = textwrap.dedent(f"""
        import torch
        from transformers import TrainerCallback
        from tests.producers import train_hf
        from tracker.record import HFCallback

        class Boom(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step == 5:
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

        train_hf({str(tmp_path / "out")!r}, steps=8, callbacks=[HFCallback(), Boom()])
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert (
        done.returncode == 1 and "OutOfMemoryError" in done.stderr
    )  # the usual traceback still prints
    log = tmp_path / "out" / "headroom.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["step"], last["event"]["kind"]) == (5, "oom")
    run = store.run(ingest(store, [log]).results[0].run_id)
    assert run.status == "crashed" and run.series["loss"].last_step == 4
