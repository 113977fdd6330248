"""Throughput: a real CPU run whose data loading the test stalls half-way, recorded by the HF
recorder; and the per-GPU speed of comparable runs on different numbers of GPUs."""

from __future__ import annotations

import time

import numpy as np
import pytest

from core.diagnostics import PeerRun, RunData
from core.diagnostics.throughput import comparable
from core.shape import RunShape
from tests.core.diagnostics.runs import kinds, only, read, series
from tests.producers import paced, train_hf

STEPS, STALL_FROM = 36, 22


def stall_from(step: int, seconds: float):
    """A Trainer callback that makes every step from ``step`` on wait, as a starved loader does."""
    from transformers import TrainerCallback

    class Stall(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step >= step:
                time.sleep(seconds)

    return Stall()


@pytest.mark.slow
def test_a_stalled_data_loader_is_a_throughput_drop(tmp_path):
    from tracker.record import HFCallback

    # Paced to 100 ms a step, so the machine's own hiccups (a tiny model's step takes a few ms)
    # do not look like a drop before the stall: the test sets the rate, the stall divides it by 10.
    train_hf(tmp_path, steps=STEPS, eval_steps=STEPS, save_steps=STEPS, logging_steps=1,
             load_best_model_at_end=False,
             callbacks=[HFCallback(), paced(0.1), stall_from(STALL_FROM, 1.0)])
    run = read(tmp_path / "headroom.jsonl")
    drop = only(run, "throughput_drop")
    assert drop.metric == "tokens_per_s" and not drop.evidence["recovered"]
    assert STALL_FROM - 4 <= drop.step_start <= STALL_FROM + 4 and drop.step_end == STEPS
    assert drop.evidence["drop"] > 0.5
    assert drop.evidence["dropped_level"] < 0.5 * drop.evidence["good_level"]


def test_evaluation_pauses_are_not_a_drop():
    steps = np.arange(1, 401)
    rate = np.full(400, 5000.0) + np.random.default_rng(4).normal(0, 100, 400)
    rate[::50] = 800.0  # every 50th interval holds an evaluation
    assert kinds(RunData(series=series(tokens_per_s=(steps, rate)))) == []


def shape(gpus: int, **fields) -> RunShape:
    base = dict(model="meta-llama/Llama-3.1-8B", n_params=8_030_261_248, method="full",
                seq_len=4096, micro_batch=2, n_gpus=gpus)
    return RunShape(**{**base, **fields})


def throughput(per_gpu: float, gpus: int) -> dict:
    steps = np.arange(1, 201)
    return series(tokens_per_s=(steps, np.full(200, per_gpu * gpus)))


def test_more_gpus_that_each_do_much_less_work_are_flagged_with_the_smaller_run_named():
    small = PeerRun("run 3 (llama-2gpu)", shape(2), throughput(4000, 2))
    run = RunData(series=throughput(1500, 8), shape=shape(8, tp=8), peers=[small])
    found = only(run, "scaling")
    assert found.evidence["efficiency"] == pytest.approx(1500 / 4000)
    assert found.evidence["peer"] == "run 3 (llama-2gpu)" and found.evidence["tp"] == 8
    assert "slower in total" not in found.message  # 12k tokens/s on 8 GPUs beats 8k on 2
    assert "Reduce TP" in found.remedy
    slower = RunData(series=throughput(900, 8), shape=shape(8), peers=[small])
    assert "slower in total" in only(slower, "scaling").message


def test_scaling_that_keeps_most_of_the_per_gpu_speed_is_fine():
    small = PeerRun("run 3", shape(2), throughput(4000, 2))
    assert kinds(RunData(series=throughput(3400, 8), shape=shape(8), peers=[small])) == []


def test_only_runs_of_the_same_model_and_setup_compare():
    assert comparable(shape(8), shape(2))
    assert not comparable(shape(8), shape(8))
    assert not comparable(shape(8), shape(2, seq_len=8192))
    assert not comparable(shape(8), RunShape(n_params=70_553_706_496, n_gpus=2))
    # Fields one shape does not state do not keep runs apart.
    assert comparable(shape(8), RunShape(n_params=8_030_261_248, n_gpus=4))
