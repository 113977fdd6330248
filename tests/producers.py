"""Real logs made by really running the libraries on a tiny model on the CPU.

Tests use these instead of hand-written fixtures, so a reader is pinned to
what the library actually writes. Each producer takes a few seconds.
"""

from __future__ import annotations

from pathlib import Path


def tiny_gpt2_config(vocab: int = 64, layers: int = 2, hidden: int = 32, heads: int = 2):
    from transformers import GPT2Config

    return GPT2Config(vocab_size=vocab, n_positions=64, n_embd=hidden, n_layer=layers,
                      n_head=heads, bos_token_id=0, eos_token_id=0)


def token_dataset(n: int, seq: int = 16, vocab: int = 64, seed: int = 0):
    """A list of {"input_ids", "labels"} dicts of a learnable repeating pattern."""
    import torch

    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        start = int(torch.randint(0, vocab, (1,), generator=g))
        ids = (torch.arange(seq) * 3 + start) % vocab
        rows.append({"input_ids": ids, "labels": ids.clone()})
    return rows


def train_hf(out_dir: Path, steps: int = 24, eval_steps: int = 8, save_steps: int = 8,
             lr: float = 5e-3, callbacks: list | None = None, **args) -> Path:
    """Train a tiny GPT-2 with the HF Trainer (eval, checkpoints, best model); returns out_dir."""
    import torch
    from transformers import GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(tiny_gpt2_config())
    options = dict(
        output_dir=str(out_dir), max_steps=steps, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, learning_rate=lr, logging_steps=2,
        eval_strategy="steps", eval_steps=eval_steps, save_steps=save_steps,
        save_total_limit=None, load_best_model_at_end=True, metric_for_best_model="eval_loss",
        report_to=[], use_cpu=True, disable_tqdm=True, seed=0, dataloader_num_workers=0,
    )
    options.update(args)
    trainer = Trainer(model=model, args=TrainingArguments(**options),
                      train_dataset=token_dataset(64), eval_dataset=token_dataset(16, seed=1),
                      callbacks=callbacks)
    trainer.train()
    trainer.save_state()
    trainer.save_metrics("train", trainer.state.log_history[-1])
    return out_dir
