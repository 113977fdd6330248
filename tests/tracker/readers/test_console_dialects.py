"""DeepSpeed, torchtitan, nanoGPT/llm.c and HF/axolotl console logs: excerpts in their real formats."""

from __future__ import annotations

import math

import pytest

from tracker.readers import best_reader
from tracker.readers.text import deepspeed, hf_console, nanogpt, torchtitan

DS = "[2024-04-21 02:45:{s:02d},722] [INFO] [{where}] "


def write(tmp_path, name: str, *lines: str):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_deepspeed_progress_timer_memory_breakdown_and_overflow(tmp_path):
    path = write(
        tmp_path, "ds.log",
        "Before initializing optimizer states",
        "MA 5.33 GB         Max_MA 5.33 GB         CA 5.35 GB         Max_CA 5 GB ",
        "CPU Virtual Memory:  used = 102.62 GB, percent = 6.8%",
        DS.format(s=40, where="logging.py:96:log_dist") + "[Rank 0] step=3, skipped=0, lr=[1.5e-07, 1.5e-07], "
        "mom=[(0.9, 0.999), (0.9, 0.999)]",
        DS.format(s=40, where="timer.py:260:stop") + "epoch=0/micro_step=3/global_step=3, "
        "RunningAvgSamplesPerSec=74.68528989415996, CurrSamplesPerSec=74.68528989415996, "
        "MemAllocated=4.75GB, MaxMemAllocated=15.59GB",
        DS.format(s=41, where="logging.py:96:log_dist") + "[Rank 0] time (ms) | fwd_microstep: 3865.99 | "
        "bwd_microstep: 11249.42 | step_microstep: 888.44",
        DS.format(s=42, where="loss_scaler.py:183:update_scale") + "[deepspeed] OVERFLOW! Rank 0 Skipping step. "
        "Attempted loss scale: 65536, reducing to 32768",
        DS.format(s=43, where="logging.py:96:log_dist") + "[Rank 0] step=6, skipped=1, lr=[3e-07, 1e-07], mom=[]",
    )
    assert best_reader(path).name == "deepspeed"
    run = deepspeed.read_runs(path)[0]
    assert run.series["lr"].steps.tolist() == [3, 6] and run.series["lr/group1"].values.tolist() == [1e-07]
    assert run.series["skipped_iters"].values.tolist() == [0, 1]
    assert run.series["samples_per_s"].values[0] == pytest.approx(74.685, abs=1e-3)
    # see_memory_usage before the first step lands just before it; Max_CA is an integer, CA is not
    peak = run.series["mem_peak_gib"]
    assert peak.steps.tolist() == [2, 3] and peak.values.tolist() == [5.33, 15.59]
    assert run.series["mem_reserved_gib"].values.tolist() == [5.35]
    assert run.series["time_fwd_microstep_s"].values[0] == pytest.approx(3.86599)
    assert run.series["loss_scale"].steps.tolist() == [3] and run.series["loss_scale"].values[0] == 32768
    assert run.config["memory_peaks"]["mem_peak_gib"] == "per-interval + cumulative"
    assert run.started is not None and run.series["lr"].wall_time is not None


def test_deepspeed_engine_configuration_block(tmp_path):
    prefix = DS.format(s=1, where="config.py:1000:print")
    path = write(
        tmp_path, "ds.log", prefix + "DeepSpeedEngine configuration:",
        prefix.replace("1000", "1004") + "  activation_checkpointing_config  {",
        '    "partition_activations": false,', "}",
        prefix.replace("1000", "1004") + "  bfloat16_enabled ............. True",
        prefix.replace("1000", "1004") + "  zero_optimization_stage ...... 2",
        prefix.replace("1000", "990") + "  json = {", '    "train_micro_batch_size_per_gpu": 4,',
        '    "gradient_accumulation_steps": 8,', '    "zero_optimization": {"stage": 2, "offload_optimizer": '
        '{"device": "cpu"}}', "}",
        DS.format(s=5, where="logging.py:96:log_dist") + "[Rank 0] step=10, skipped=0, lr=[0.0003], mom=[(0.9, 0.999)]",
    )
    run = deepspeed.read_runs(path)[0]
    assert run.shape.known() | {"zero_stage": 2, "precision": "mixed-bf16", "micro_batch": 4, "grad_accum": 8,
                                "cpu_offload": True} == run.shape.known()
    assert run.config["deepspeed"]["zero_optimization"]["stage"] == 2


@pytest.mark.parametrize(("line", "expected"), [
    # current (2025-06+): grad_norm, loss with five decimals, ANSI colours
    ("\x1b[31mstep: 20  \x1b[32mloss: 11.83506  \x1b[33mgrad_norm:  9.6669  \x1b[36mmemory: 48.87GiB(51.44%)  "
     "\x1b[34mtps: 4,376  \x1b[36mtflops: 253.41  \x1b[35mmfu: 25.62%\x1b[39m",
     {"loss": 11.83506, "grad_norm": 9.6669, "mem_reserved_gib": 48.87, "mem_reserved_gib_pct": 51.44,
      "tokens_per_s": 4376, "tflops": 253.41, "mfu": 25.62}),
    # early 2025: no grad_norm; float8 runs print mfu: N/A
    ("step: 20  loss:  7.4350  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: N/A",
     {"loss": 7.435, "mem_reserved_gib": 49.66, "mem_reserved_gib_pct": 52.28, "tokens_per_s": 5856,
      "tflops": 339.16}),
    # 2024: wps, no tflops
    ("step: 20  loss:  8.1200  memory: 30.01GiB(37.90%)  wps: 1,234  mfu: 12.50%",
     {"loss": 8.12, "mem_reserved_gib": 30.01, "mem_reserved_gib_pct": 37.9, "tokens_per_s": 1234, "mfu": 12.5}),
])
def test_torchtitan_step_lines_of_each_era(tmp_path, line, expected):
    header = "[titan] 2025-06-01 12:00:00,123 - root - INFO - "
    path = write(tmp_path, "titan.log", header + "Starting job: Llama 3 8B training",
                 header + "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory",
                 header + "Building llama3 8B with TransformerModelArgs(_enforced='x', dim=4096, n_layers=32, "
                 "n_heads=32, n_kv_heads=8, vocab_size=128256, multiple_of=1024, norm_eps=1e-05)",
                 header + "Model llama3 8B size: 8,030,261,248 total parameters",
                 header + "Applied selective activation checkpointing to the model",
                 header + line, f"[rank1]:{header}{line}")
    assert best_reader(path).name == "torchtitan"
    run = torchtitan.read_runs(path)[0]
    assert {name: series.values.tolist() for name, series in run.series.items()} == {
        name: [pytest.approx(value)] for name, value in expected.items()}
    assert run.series["loss"].steps.tolist() == [20]
    assert run.config["memory_peaks"] == {"mem_reserved_gib": "per-interval"}
    assert run.shape.known() | {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_mem_gib": 79.11, "n_layers": 32,
                                "hidden": 4096, "n_kv_heads": 8, "vocab": 128256, "n_params": 8030261248,
                                "recompute": "op", "framework": "torchtitan"} == run.shape.known()


def test_nanogpt_mfu_sentinel_is_not_a_value(tmp_path):
    path = write(tmp_path, "train.out", "number of parameters: 10.65M", "step 0: train loss 4.2874, val loss 4.2823",
                 "iter 0: loss 4.2649, time 11837.37ms, mfu -100.00%", "iter 10: loss 3.2379, time 37.39ms, mfu 9.97%",
                 "iter 20: loss nan, time 37.20ms, mfu 10.01%")
    assert best_reader(path).name == "nanogpt"
    run = nanogpt.read_runs(path)[0]
    assert run.series["mfu"].steps.tolist() == [10, 20]
    assert run.series["eval_loss"].values.tolist() == [4.2823] and "eval/train_loss" in run.series
    assert math.isnan(run.series["loss"].values[-1]) and run.series["step_time_s"].values[1] == pytest.approx(0.03739)
    assert run.shape.n_params == 10_650_000


def test_llmc_console_and_modded_nanogpt_peak_memory(tmp_path):
    path = write(tmp_path, "llmc.txt",
                 "step    1/74 | train loss 11.009236 | norm 15.3702 | lr 1.00e-06 | 190.74 ms | -100.0% bf16 MFU "
                 "| 24735 tok/s",
                 "step    2/74 | train loss 10.912345 | norm 14.2000 | lr 2.00e-06 | 180.10 ms | 42.1% bf16 MFU "
                 "| 26000 tok/s", "val loss 10.5", "peak memory consumption: 22470 MiB")
    run = nanogpt.read_runs(path)[0]
    assert run.series["tokens_per_s"].values.tolist() == [24735, 26000] and run.series["mfu"].steps.tolist() == [2]
    assert run.series["eval_loss"].steps.tolist() == [2]
    assert run.series["mem_peak_gib"].values.tolist() == [22470 / 1024]


def test_hf_console_quoted_numbers_axolotl_memory_and_tqdm_noise(tmp_path):
    bar = " {pct}%|##        | {n}/50 [00:{n:02d}<00:40,  1.20it/s]"
    path = write(
        tmp_path, "axolotl.log",
        "***** Running training *****", "  Num examples = 3,290", "  Num Epochs = 2",
        "  Instantaneous batch size per device = 4", "  Gradient Accumulation steps = 2",
        "  Total optimization steps = 50", "  Number of trainable parameters = 4,194,304",
        bar.format(pct=18, n=9) + "\r" + bar.format(pct=20, n=10),
        "{'loss': '2.105', 'grad_norm': '1.5', 'learning_rate': '2e-05', 'memory/max_allocated (GiB)': 10.52, "
        "'memory/device_reserved (GiB)': 12.1, 'epoch': '0.4'}",
        bar.format(pct=20, n=10) + "\r" + bar.format(pct=40, n=20),
        "{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '1e-05', 'epoch': '0.8'}",
        bar.format(pct=40, n=20),
        "  0%|          | 0/5 [00:00<?, ?it/s]\r100%|##########| 5/5 [00:01<00:00,  4.1it/s]",
        "{'eval_loss': '1.9', 'eval_runtime': '1.2', 'epoch': '0.8'}",
        bar.format(pct=40, n=20),
        "{'train_runtime': '40.1', 'train_samples_per_second': '8.1', 'train_loss': '2.0', 'epoch': '2.0'}",
    )
    assert best_reader(path).name == "hf_console"
    run = hf_console.read_runs(path)[0]
    assert run.series["loss"].steps.tolist() == [10, 20] and math.isnan(run.series["loss"].values[1])
    assert run.series["eval_loss"].steps.tolist() == [20] and "epoch" in run.series
    assert run.series["mem_peak_gib"].values.tolist() == [10.52]
    assert run.series["mem_reserved_gib"].values.tolist() == [12.1]
    assert run.summary["train_runtime"] == 40.1
    assert run.shape.known() | {"micro_batch": 4, "grad_accum": 2, "n_trainable_params": 4194304} == run.shape.known()


def test_hf_console_steps_from_logging_steps_when_the_bars_are_gone(tmp_path):
    """A copied Windows console keeps only each bar's last redraw; logging_steps gives the step."""
    path = write(tmp_path, "cmd.txt", "TrainingArguments(", "logging_steps=500,", "per_device_train_batch_size=6,",
                 "bf16=True,", "gradient_checkpointing=True,", ")",
                 "{'loss': 1.1409, 'grad_norm': 2.75, 'learning_rate': 1.8e-05, 'epoch': 0.91}",
                 " 10%|###    | 549/5490 [05:02<38:38,  2.13it/s]",
                 "{'eval_loss': 0.6597, 'eval_runtime': 2725.7, 'epoch': 1.0}",
                 " 10%|###    | 549/5490 [50:28<38:38,  2.13it/s]",
                 "{'loss': 0.6419, 'grad_norm': 3.13, 'learning_rate': 1.6e-05, 'epoch': 1.82}")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    run = hf_console.read_runs(path)[0]
    assert run.series["loss"].steps.tolist() == [500, 1000] and run.series["eval_loss"].steps.tolist() == [549]
    assert run.shape.known() | {"micro_batch": 6, "precision": "mixed-bf16", "recompute": "full"} == run.shape.known()


def test_hf_and_deepspeed_in_one_log(tmp_path):
    path = write(tmp_path, "run.log",
                 DS.format(s=1, where="logging.py:96:log_dist") + "[Rank 0] step=10, skipped=0, "
                 "lr=[0.0003333333333333334], mom=[(0.9, 0.999)]",
                 DS.format(s=1, where="timer.py:260:stop") + "epoch=0/micro_step=40/global_step=10, "
                 "RunningAvgSamplesPerSec=83.4, CurrSamplesPerSec=83.5, MemAllocated=0.26GB, MaxMemAllocated=9.02GB",
                 "{'loss': 0.8091, 'learning_rate': 0.0003333333333333334, 'epoch': 0.08}")
    assert best_reader(path).name == "hf_console"
    run = hf_console.read_runs(path)[0]
    assert run.series["loss"].steps.tolist() == [10] and run.series["mem_peak_gib"].values.tolist() == [9.02]


def test_a_scripts_own_key_value_lines_fall_back_to_the_console_reader(tmp_path):
    path = write(tmp_path, "finetune.log", "loading data...",
                 *(f"step {s} | loss={3 - s / 100:.3f} lr=3e-4 time: {120 + s}ms" for s in (10, 20, 30, 40)),
                 "Epoch 1/2", "Train Loss: 2.58 - Valid Loss: 2.61")
    assert best_reader(path).name == "console"
    run = best_reader(path).read(path)[0]
    assert run.series["loss"].steps.tolist() == [10, 20, 30, 40]
    assert run.series["time_s"].values[0] == pytest.approx(0.13) and run.series["lr"].values[0] == 3e-4
    assert run.series["eval_loss"].steps.tolist() == [40]  # steps are counted: the epoch is a metric
    assert run.series["epoch"].values.tolist() == [1]
