"""What recording costs a training loop (issue 9: "< 1 % of step time").

Trains the tests' tiny GPT-2 on the CPU three ways: a plain PyTorch loop with
``Recorder``, the HF Trainer with ``HFCallback``, and Lightning with
``LightningCallback`` (and Lightning once more on the tests' even tinier
language model, whose 1-2 ms step is mostly Lightning's own loop); each with
and without its recorder, in interleaved rounds. It prints two figures per
recorder:

- **in recorder**: the time spent inside the recorder's own code during
  training (every per-step hook and ``step`` call is timed) as a share of the
  training time. This is the cost itself, and stable from run to run; the
  once-per-run set-up and close (which fsyncs the log) are printed apart, in ms;
- **end to end**: the median step time with the recorder against without,
  over the rounds. On a busy or shared machine this is noisier than 1 %.

The recorders record every 10 steps (``every=10``, ``logging_steps=10``,
``log_every_n_steps=10``) and the plain loop also every step (``every=1``),
the worst case. Logs go to a temporary folder::

    .venv/bin/python bench/record_overhead.py            # 300 steps x 5 rounds
    .venv/bin/python bench/record_overhead.py --quick    # 100 steps x 3 rounds
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.producers import tiny_gpt2_config, token_dataset, train_hf, train_lightning  # noqa: E402
from tracker.record import HFCallback, LightningCallback, Recorder  # noqa: E402

HOOKS = {
    "hf": ("on_train_begin", "on_log", "on_step_end", "on_save", "on_train_end", "_count"),
    "lightning": (
        "on_train_start",
        "on_before_optimizer_step",
        "on_train_batch_end",
        "on_validation_start",
        "on_validation_end",
        "on_save_checkpoint",
        "on_train_end",
    ),
}


# Called once per run (set-up, summary, close with fsync): reported apart from the per-step cost.
ONCE = {"on_train_begin", "on_train_start", "on_train_end", "close"}


class Stopwatch:
    """Accumulates the time spent in the wrapped methods of one object."""

    def __init__(self) -> None:
        self.seconds = 0.0  # in the per-step methods
        self.once = 0.0  # in the once-per-run methods

    def wrap(self, obj: object, names: tuple[str, ...]) -> object:
        for name in names:
            setattr(obj, name, self._timed(getattr(obj, name), name in ONCE))
        return obj

    def _timed(self, fn: Callable, once: bool) -> Callable:
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if once:
                    self.once += time.perf_counter() - start
                else:
                    self.seconds += time.perf_counter() - start

        return timed


def plain_loop(folder: Path, steps: int, every: int | None, watch: Stopwatch) -> float:
    """Wall seconds of ``steps`` AdamW steps of the tiny GPT-2; recorded unless every is None."""
    import torch
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(tiny_gpt2_config())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rows = token_dataset(64)
    batches = [torch.stack([r["input_ids"] for r in rows[i : i + 8]]) for i in range(0, 64, 8)]
    rec = None
    if every is not None:
        rec = watch.wrap(
            Recorder(folder / "loop.jsonl", model=model, optimizer=optimizer, every=every),
            ("step", "close"),
        )
    start = time.perf_counter()
    for step in range(1, steps + 1):
        ids = batches[step % len(batches)]
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rec is not None:
            rec.step(step, loss=loss, batch=ids)
    if rec is not None:
        rec.close()
    return time.perf_counter() - start


def hf_run(folder: Path, steps: int, record: bool, watch: Stopwatch) -> float:
    callbacks = [watch.wrap(HFCallback(), HOOKS["hf"])] if record else []
    start = time.perf_counter()
    train_hf(
        folder,
        steps=steps,
        callbacks=callbacks,
        logging_steps=10,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
    )
    return time.perf_counter() - start


def lightning_run(folder: Path, steps: int, record: bool, watch: Stopwatch) -> float:
    callbacks = (watch.wrap(LightningCallback(), HOOKS["lightning"]),) if record else ()
    start = time.perf_counter()
    train_lightning(
        folder, steps=steps, loggers=("csv",), val_every=steps, log_every=10, callbacks=callbacks
    )
    return time.perf_counter() - start


def lightning_gpt2_run(folder: Path, steps: int, record: bool, watch: Stopwatch) -> float:
    """Lightning on the tiny GPT-2 of the loop and HF cases (train_lightning's model is tinier)."""
    import lightning as L
    import torch
    from lightning.pytorch.loggers import CSVLogger
    from transformers import GPT2LMHeadModel

    class TinyGPT2(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = GPT2LMHeadModel(tiny_gpt2_config())

        def training_step(self, batch, _):
            loss = self.model(input_ids=batch, labels=batch).loss
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    torch.manual_seed(0)
    ids = torch.stack([row["input_ids"] for row in token_dataset(64)])
    callbacks = [watch.wrap(LightningCallback(), HOOKS["lightning"])] if record else []
    trainer = L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        log_every_n_steps=10,
        logger=CSVLogger(folder),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    )
    start = time.perf_counter()
    trainer.fit(TinyGPT2(), torch.utils.data.DataLoader(ids, batch_size=8))
    return time.perf_counter() - start


CASES = {
    "plain loop, Recorder(every=1)": lambda f, n, on, w: plain_loop(f, n, 1 if on else None, w),
    "plain loop, Recorder(every=10)": lambda f, n, on, w: plain_loop(f, n, 10 if on else None, w),
    "HF Trainer, HFCallback": hf_run,
    "Lightning tiny LM, LightningCallback": lightning_run,
    "Lightning GPT-2, LightningCallback": lightning_gpt2_run,
}


def measure(run: Callable, steps: int, rounds: int, root: Path) -> dict[str, float]:
    """Medians over the rounds: ms per step without and with, share inside the recorder, once-ms."""
    without, with_, inside, once = [], [], [], []
    for i in range(rounds):
        for on in (False, True):
            watch = Stopwatch()
            with contextlib.redirect_stdout(io.StringIO()):  # the Trainer prints every log
                seconds = run(root / f"{i}-{on}", steps, on, watch)
            (with_ if on else without).append(seconds / steps * 1e3)
            if on:
                inside.append(watch.seconds / (seconds - watch.once))
                once.append(watch.once * 1e3)
    return {
        "without": statistics.median(without),
        "with": statistics.median(with_),
        "inside": statistics.median(inside),
        "once": statistics.median(once),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 steps x 3 rounds")
    args = parser.parse_args()
    steps, rounds = (100, 3) if args.quick else (300, 5)
    print(f"{steps} steps x {rounds} rounds, tiny GPT-2 / tiny LM on the CPU\n")
    print(
        f"{'case':36} {'ms/step without':>15} {'with':>7} {'end to end':>10} "
        f"{'in recorder':>11} {'once, ms':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, run) in enumerate(CASES.items()):
            m = measure(run, steps, rounds, Path(tmp) / str(n))
            print(
                f"{name:36} {m['without']:15.2f} {m['with']:7.2f} "
                f"{100 * (m['with'] / m['without'] - 1):+9.1f}% {100 * m['inside']:10.3f}% "
                f"{m['once']:9.1f}"
            )
    print(
        "\ntarget: in recorder (per-step hooks / training time) < 1 %; 'once' is set-up and close"
    )


if __name__ == "__main__":
    main()
