"""Megatron-LM console logs: short excerpts in the real formats, written for each case."""

from __future__ import annotations

import pytest

from core.metrics import GIB
from tests.tracker.readers.test_console_lines import iteration
from tracker.ingest import ingest
from tracker.readers.text.megatron import read_runs

ARGS = """------------------------ arguments ------------------------
  bf16 ............................................ True
  global_batch_size ............................... 64
  group_query_attention ........................... True
  hidden_size ..................................... 4096
  micro_batch_size ................................ 2
  num_attention_heads ............................. 32
  num_layers ...................................... 32
  num_query_groups ................................ 8
  recompute_granularity ........................... selective
  seq_length ...................................... 4096
  sequence_parallel ............................... True
  tensor_model_parallel_size ...................... 4
  pipeline_model_parallel_size .................... 2
  data_parallel_size .............................. 2
  use_distributed_optimizer ....................... True
  world_size ...................................... 16
-------------------- end of arguments ---------------------
"""
MEMORY = ("[Rank {rank}] (after {step} iterations) memory (MB) | allocated: 15012.25 | max allocated: {peak} | "
          "reserved: 35128.00 | max reserved: {reserved}")


def write(tmp_path, text: str, name: str = "pretrain.log"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_arguments_dump_fills_the_shape_with_sources(tmp_path):
    run = read_runs(write(tmp_path, ARGS + iteration(1) + "\n"))[0]
    assert run.shape.known() | {
        "n_layers": 32, "hidden": 4096, "n_heads": 32, "n_kv_heads": 8, "seq_len": 4096, "micro_batch": 2,
        "global_batch": 64, "grad_accum": 16, "tp": 4, "pp": 2, "n_gpus": 16, "precision": "mixed-bf16",
        "recompute": "selective", "sequence_parallel": True, "zero_stage": 1, "method": "full",
    } == run.shape.known()
    assert run.shape.sources["grad_accum"] == "Megatron arguments"


def test_each_rank_keeps_its_peak_and_the_run_takes_the_largest(tmp_path):
    text = iteration(10) + "\n" + "\n".join(
        MEMORY.format(rank=r, step=10, peak=p, reserved=q)
        for r, p, q in ((0, "33480.77", "35128.00"), (2, "40960.00", "43008.00"), (1, "30000.50", "31000.00"))
    ) + "\n"
    run = read_runs(write(tmp_path, text))[0]
    assert run.series["mem_peak_gib"].values.tolist() == [40960.0 / 1024]
    assert run.series["mem_reserved_gib"].values.tolist() == [43008.0 / 1024]
    assert run.series["mem_peak_gib/rank0"].values.tolist() == [pytest.approx(33480.77 / 1024)]
    assert run.series["mem_reserved_gib/rank1"].steps.tolist() == [10]
    assert run.config["memory_peaks"] == {"mem_peak_gib": "cumulative", "mem_reserved_gib": "cumulative"}


def test_bridge_memory_report_is_in_decimal_gigabytes(tmp_path):
    line = ("[Rank 0] (after 1 iterations) memory (GB) | mem-allocated-gigabytes: 51.072 | "
            "mem-reserved-gigabytes: 216.89 | mem-max-allocated-gigabytes: 194.41 | "
            "mem-max-reserved-gigabytes: 216.89 | mem-alloc-retires: 0 | mem-allocated-count: 571")
    run = read_runs(write(tmp_path, "Theoretical memory footprints: weight and optimizer=57438.81 MB\n"
                                    + iteration(1) + "\n" + line + "\n"))[0]
    assert run.series["mem_peak_gib"].values[0] == pytest.approx(194.41e9 / GIB)
    assert run.series["mem_reserved_gib"].values[0] == pytest.approx(216.89e9 / GIB)
    assert run.series["mem_allocated_count"].values[0] == 571
    assert run.summary == {"megatron_predicted_weights_gib": pytest.approx(57438.81 / 1024, abs=1e-4)}


def test_restart_from_scratch_is_a_second_run(tmp_path):
    text = ARGS + "".join(iteration(s) + "\n" for s in (1, 2, 3)) + ARGS.replace("16\n", "8\n", 1)
    text += "".join(iteration(s) + "\n" for s in (1, 2))
    first, second = read_runs(write(tmp_path, text))
    assert first.series["loss"].steps.tolist() == [1, 2, 3] and second.series["loss"].steps.tolist() == [1, 2]
    assert (first.key, second.key) == ("1", "2") and second.name == "pretrain #2"


def test_resume_from_a_checkpoint_is_one_run_with_a_boundary(tmp_path):
    """Steps 4-6 ran, the job died, it resumed from the step-3 checkpoint: 4-6 are replaced, not zigzagged."""
    before = "".join(iteration(s, f"{9 - s}.0E+00") + "\n" for s in range(1, 7))
    after = "".join(iteration(s, f"{9.5 - s}.0E+00".replace(".5.0", ".5")) + "\n" for s in range(4, 9))
    runs = read_runs(write(tmp_path, ARGS + before + ARGS + " loading checkpoint at iteration 3\n" + after))
    assert len(runs) == 1
    loss = runs[0].series["loss"]
    assert loss.steps.tolist() == list(range(1, 9))
    assert loss.values[3] == pytest.approx(5.5)  # step 4 as logged after the resume
    resume = [e for e in runs[0].events if e.kind == "resume"]
    assert [(e.step, e.data["from_step"], e.data["dropped_points"] > 0) for e in resume] == [(4, 6, True)]


def test_skipped_iterations_without_a_loss_and_validation_lines(tmp_path):
    skipped = (" [2024-08-01 09:44:55] iteration        1/       5 | consumed samples:           32 | "
               "elapsed time per iteration (ms): 3902.7 | learning rate: 6.000000E-05 | global batch size:    32 |"
               " loss scale: 4294967296.0 | number of skipped iterations:   1 | number of nan iterations:   0 |")
    validation = " validation loss at iteration 2 | lm loss value: 6.335348E+00 | lm loss PPL: 5.641655E+02 | "
    test = " validation loss at the end of training for test data | lm loss value: 6.1E+00 | lm loss PPL: 4.4E+02 |"
    run = read_runs(write(tmp_path, "\n".join([skipped, iteration(2), validation, test]) + "\n"))[0]
    assert run.series["loss_scale"].steps.tolist() == [1, 2] and run.series["loss"].steps.tolist() == [2]
    assert run.series["skipped_iters"].values.tolist() == [1, 0]
    assert run.series["eval_loss"].steps.tolist() == [2] and "eval/lm loss PPL" in run.series
    assert run.summary["test/lm loss"] == pytest.approx(6.1)
    assert run.started is not None and run.series["step_time_s"].values[0] == pytest.approx(3.9027)


def test_ingest_keeps_both_runs_of_a_file(store, tmp_path):
    text = "".join(iteration(s) + "\n" for s in (1, 2, 3)) + "".join(iteration(s) + "\n" for s in (1, 2))
    report = ingest(store, [write(tmp_path, text)])
    assert [r.status for r in report.results] == ["ingested", "ingested"]
    assert {r.run_name for r in report.results} == {"pretrain", "pretrain #2"}
