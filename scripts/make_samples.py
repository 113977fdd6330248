"""Make the sample runs in ``resources/samples/`` that "Load sample runs" ingests.

Two kinds, both made here and never copied from anyone's logs:

* real runs: tiny language models really trained on the CPU with the Hugging
  Face Trainer (two learning rates) and with Lightning (CSVLogger), logs only,
  no weights;
* synthetic runs: Headroom JSONL logs of large jobs (Llama-3-8B full fine-tune
  with FSDP on 8 H100s; QLoRA on one RTX 4090) drawn from simple models of a
  loss curve, with memory, throughput, a resume and fp16 overflows at figures
  consistent with docs/design.md's memory model. Their names start with
  ``synthetic-`` and resources/samples/README.md says so.

Run from the repository root: ``.venv/bin/python scripts/make_samples.py``.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.producers, the project's tiny-model trainers
OUT = ROOT / "resources" / "samples"
# Trainer outputs kept: the logs and configs Headroom reads (weights and pickles are not).
KEEP = {"trainer_state.json", "config.json", "all_results.json", "train_results.json",
        "eval_results.json"}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, lr, scheduler in (("hf-gpt2-tiny-lr5e-3", 5e-3, "linear"),
                                ("hf-gpt2-tiny-lr1e-3-cosine", 1e-3, "cosine")):
        hf_run(OUT / name, lr, scheduler)
    lightning_run(OUT / "lightning-tiny-lm")
    write_jsonl(OUT / "synthetic-llama3-8b-fsdp-8xh100.jsonl", fsdp_8b())
    write_jsonl(OUT / "synthetic-llama3-8b-qlora-rtx4090.jsonl", qlora_8b())
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"samples in {OUT}: {total / 1024:.0f} KB")


# ---- Real runs


def hf_run(out: Path, lr: float, scheduler: str) -> None:
    """Train a tiny GPT-2 with the HF Trainer on the CPU; keep its logs, drop its weights."""
    from tests.producers import train_hf

    work = out.with_name(out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    trainer_dir = train_hf(
        work, steps=300, eval_steps=25, save_steps=300, lr=lr, logging_steps=5,
        lr_scheduler_type=scheduler, warmup_steps=20, save_strategy="no",
        load_best_model_at_end=False,
        run_name=out.name,
    )
    _save_model_config(trainer_dir)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for path in trainer_dir.iterdir():
        if path.name in KEEP:
            shutil.copy2(path, out / path.name)
    shutil.rmtree(work)


def lightning_run(out: Path) -> None:
    """Train a tiny LM with Lightning's CSVLogger; keep metrics.csv and hparams.yaml."""
    from tests.producers import train_lightning

    work = out.with_name(out.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    version = train_lightning(work, steps=300, loggers=("csv",), val_every=25, log_every=5)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for name in ("metrics.csv", "hparams.yaml"):
        shutil.copy2(version / name, out / name)
    shutil.rmtree(work)


def _save_model_config(folder: Path) -> None:
    """config.json as ``save_pretrained`` writes it (the architecture Headroom reads)."""
    from tests.producers import tiny_gpt2_config

    tiny_gpt2_config().save_pretrained(folder)


# ---- Synthetic runs


@dataclass(frozen=True)
class Job:
    """A large training job to simulate: its header and the shape of its curves."""

    name: str
    started: datetime
    shape: dict
    config: dict
    steps: int
    log_every: int
    step_time_s: float
    tokens_per_step: int
    loss_start: float
    loss_end: float
    peak_lr: float
    warmup: int
    mem_peak_gib: float
    mem_reserved_gib: float
    eval_every: int
    seed: int


def fsdp_8b() -> Iterator[dict]:
    """Llama-3.1-8B full fine-tune, FSDP over 8 H100 80GB, seq 8192: a loss spike and a resume.

    Memory: 16 B/param of sharded states (8.03e9 x 16 / 8 = 15 GiB per GPU) plus
    activations with selective recompute and fp32 logits at 128k vocab: ~58 GiB
    allocated, ~66 GiB reserved. Throughput ~5.9k tokens/s per GPU.
    """
    job = Job(
        name="synthetic-llama3-8b-fsdp-8xh100", started=datetime(2025, 3, 4, 21, 12, tzinfo=UTC),
        shape=dict(model="meta-llama/Llama-3.1-8B", family="llama", n_params=8_030_261_248,
                   n_layers=32, hidden=4096, n_heads=32, n_kv_heads=8, vocab=128_256,
                   intermediate=14_336, method="full", precision="mixed-bf16", optimizer="adamw",
                   micro_batch=1, grad_accum=4, global_batch=32, seq_len=8192,
                   recompute="selective", attention="flash", n_gpus=8, n_nodes=1, fsdp="full_shard",
                   gpu_model="H100 SXM 80GB", gpu_mem_gib=80.0, framework="torchtitan"),
        config=dict(job={"description": "synthetic sample: continued pre-training of Llama-3.1-8B"},
                    optimizer={"name": "AdamW", "lr": 2e-5, "eps": 1e-8, "weight_decay": 0.1},
                    lr_scheduler={"warmup_steps": 200, "decay_type": "cosine", "lr_min": 0.1},
                    training={"local_batch_size": 1, "seq_len": 8192, "steps": 5000,
                              "gradient_accumulation_steps": 4, "max_norm": 1.0,
                              "mixed_precision_param": "bfloat16"},
                    parallelism={"data_parallel_shard_degree": 8, "tensor_parallel_degree": 1},
                    activation_checkpoint={"mode": "selective", "selective_ac_option": "op"},
                    checkpoint={"enable": True, "interval": 500, "folder": "checkpoint"}),
        steps=5000, log_every=10, step_time_s=5.55, tokens_per_step=32 * 8192,
        loss_start=2.15, loss_end=1.52, peak_lr=2e-5, warmup=200, mem_peak_gib=58.3,
        mem_reserved_gib=66.1, eval_every=250, seed=8,
    )
    yield from simulate(job, spike_at=3710, resume_at=2500, checkpoint_every=500)


def qlora_8b() -> Iterator[dict]:
    """Llama-3-8B QLoRA (nf4, r=16) on one RTX 4090 24GB in fp16: overflow steps leave NaNs.

    Memory: 4-bit base weights ~5.7 GiB incl. the 16-bit embeddings and head,
    LoRA states and 8-bit paged AdamW ~0.3 GiB, activations at seq 2048 x
    micro-batch 4 with gradient checkpointing: ~14.8 GiB allocated.
    """
    job = Job(
        name="synthetic-llama3-8b-qlora-rtx4090", started=datetime(2025, 2, 11, 9, 40, tzinfo=UTC),
        shape=dict(model="meta-llama/Meta-Llama-3-8B", family="llama", n_params=8_030_261_248,
                   n_trainable_params=41_943_040, n_layers=32, hidden=4096, n_heads=32,
                   n_kv_heads=8, vocab=128_256, intermediate=14_336, method="qlora",
                   precision="mixed-fp16", optimizer="paged_adamw_8bit", quantization="nf4",
                   lora_rank=16, lora_alpha=32.0,
                   lora_targets=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                 "down_proj"],
                   micro_batch=4, grad_accum=4, global_batch=16, seq_len=2048, recompute="full",
                   attention="sdpa", n_gpus=1, gpu_model="RTX 4090", gpu_mem_gib=24.0,
                   framework="transformers"),
        config=dict(learning_rate=2e-4, lr_scheduler_type="cosine", warmup_ratio=0.03,
                    per_device_train_batch_size=4, gradient_accumulation_steps=4, fp16=True,
                    gradient_checkpointing=True, optim="paged_adamw_8bit", max_seq_length=2048,
                    lora={"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "bias": "none"},
                    bnb={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                         "bnb_4bit_compute_dtype": "float16", "bnb_4bit_use_double_quant": True},
                    note="synthetic sample"),
        steps=1500, log_every=5, step_time_s=14.2, tokens_per_step=16 * 2048,
        loss_start=1.92, loss_end=1.18, peak_lr=2e-4, warmup=45, mem_peak_gib=14.8,
        mem_reserved_gib=17.3, eval_every=100, seed=4090,
    )
    yield from simulate(job, overflow_at=(5, 10, 615, 1105))


def simulate(job: Job, spike_at: int | None = None, resume_at: int | None = None,
             checkpoint_every: int | None = None,
             overflow_at: tuple[int, ...] = ()) -> Iterator[dict]:
    """The header line, one line per logged step (plus checkpoint and event lines), the summary."""
    rng = np.random.default_rng(job.seed)
    yield {"headroom": 1, "run": {"name": job.name, "started": job.started.isoformat(),
                                  "shape": job.shape, "config": job.config}}
    clock = job.started.timestamp() + 95.0  # model load and compile before step 1
    scale = 65536.0
    for step in range(job.log_every, job.steps + 1, job.log_every):
        if resume_at is not None and step == resume_at + job.log_every:
            clock += 41 * 60.0  # node failure, requeue, reload from the checkpoint
            message = f"resumed from checkpoint/step-{resume_at}"
            yield {"step": resume_at, "wall_time": round(clock, 3),
                   "event": {"kind": "resume", "message": message}}
        clock += job.log_every * job.step_time_s * (1 + 0.015 * rng.standard_normal())
        row = _step_row(job, step, rng, clock, spike_at)
        if overflow_at:
            scale = _loss_scale(step, scale, overflow_at, row)
            row["loss_scale"] = scale
        yield row
        if step % job.eval_every == 0:
            yield {"step": step, "wall_time": round(clock + 30, 3),
                   "eval_loss": round(_loss(job, step) + 0.045 + 0.01 * rng.standard_normal(), 4)}
        if checkpoint_every and step % checkpoint_every == 0:
            yield {"step": step, "checkpoint": {"path": f"checkpoint/step-{step}",
                                                "metrics": {"loss": row["loss"]}}}
    # A recorder's run that ended normally closes with its summary record.
    yield {"step": job.steps, "wall_time": round(clock + 40, 3),
           "summary": {"train_runtime": round(clock + 40 - job.started.timestamp(), 1),
                       "steps": job.steps}}


def _step_row(job: Job, step: int, rng: np.random.Generator, clock: float,
              spike_at: int | None) -> dict:
    loss = _loss(job, step) + 0.03 * rng.standard_normal()
    grad_norm = 0.35 + 0.6 * math.exp(-step / (job.steps / 4)) + 0.05 * abs(rng.standard_normal())
    if spike_at is not None and 0 <= step - spike_at < 60:
        decay = math.exp(-(step - spike_at) / 12)
        loss += 1.6 * decay
        grad_norm += 7.5 * decay
    warm = step <= 2 * job.log_every  # allocator still growing, kernels still being tuned
    tokens_per_s = job.tokens_per_step / job.step_time_s * (0.82 if warm else 1.0)
    return {
        "step": step, "wall_time": round(clock, 3), "loss": round(loss, 4),
        "lr": _lr(job, step), "grad_norm": round(grad_norm, 4),
        "mem_peak_gib": round(job.mem_peak_gib * (0.93 if warm else 1.0) + 0.04 * rng.random(), 2),
        "mem_reserved_gib": round(job.mem_reserved_gib * (0.95 if warm else 1.0), 2),
        "tokens_per_s": round(tokens_per_s * (1 + 0.01 * rng.standard_normal())),
        "step_time_s": round(job.step_time_s * (1 + 0.015 * rng.standard_normal()), 3),
        "batch_size": job.tokens_per_step // job.shape["seq_len"],
        "tokens_seen": step * job.tokens_per_step,
    }


def _loss(job: Job, step: int) -> float:
    """A power-law decay from ``loss_start`` toward ``loss_end``, as fine-tuning curves go."""
    progress = step / job.steps
    return job.loss_end + (job.loss_start - job.loss_end) * (1 + 30 * progress) ** -0.75


def _lr(job: Job, step: int) -> float:
    """Linear warmup, then cosine decay to a tenth of the peak."""
    if step < job.warmup:
        return round(job.peak_lr * step / job.warmup, 12)
    progress = (step - job.warmup) / max(job.steps - job.warmup, 1)
    return round(job.peak_lr * (0.1 + 0.45 * (1 + math.cos(math.pi * progress))), 12)


def _loss_scale(step: int, scale: float, overflow_at: tuple[int, ...], row: dict) -> float:
    """fp16 dynamic loss scaling: an overflow skips the step (NaN) and halves the scale."""
    if step in overflow_at:
        row["loss"] = math.nan if step > 100 else row["loss"]
        row["grad_norm"] = math.nan
        return scale / 2
    return min(scale * 2, 65536.0) if step % 1000 == 0 else scale


def write_jsonl(path: Path, lines: Iterator[dict]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
