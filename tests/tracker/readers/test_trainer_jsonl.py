"""LLaMA-Factory and ms-swift JSON-lines logs, Megatron golden values, GPU samplers: the files beside them too."""

from __future__ import annotations

import json
import shutil

import pytest

from core.metrics import GIB
from tracker.readers import best_reader, gpu_sampler, llamafactory, megatron_golden, ms_swift

SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__"


def jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_llamafactory_log_with_vram_args_and_a_crash_beside_it(tmp_path):
    rows = [{"current_steps": s, "total_steps": 30, "loss": 2.5 - s / 10, "lr": 1e-4, "epoch": s / 10,
             "percentage": s / 0.3, "elapsed_time": f"0:00:{s * 2:02d}", "remaining_time": "0:01:00",
             "throughput": 1520.5, "total_tokens": s * 4096, "vram_allocated": 30.1 + s, "vram_reserved": 35.0}
            for s in (5, 10)]
    path = jsonl(tmp_path / "trainer_log.jsonl", rows)
    (tmp_path / "training_args.yaml").write_text(
        "model_name_or_path: meta-llama/Llama-3.1-8B\nfinetuning_type: lora\nlora_rank: 16\n"
        "quantization_bit: 4\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n"
        "cutoff_len: 2048\nbf16: true\n")
    (tmp_path / "running_log.txt").write_text(
        "[INFO|2025-01-02 10:00:00] llamafactory.train.callbacks:143 >> {'loss': 2.0}\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
        "23.65 GiB of which 1.02 GiB is free. Of the allocated memory 21.9 GiB is allocated by PyTorch, and "
        "0.31 GiB is reserved by PyTorch but unallocated.\n")
    assert best_reader(path).name == "llamafactory"
    run = llamafactory.read(path)
    assert run.name == f"{tmp_path.name}/trainer_log"
    assert run.series["mem_peak_gib"].values.tolist() == [35.1, 40.1]
    assert run.series["tokens_per_s"].values.tolist() == [1520.5] * 2 and run.series["elapsed_s"].values.tolist() == [10, 20]
    assert run.shape.known() | {"method": "qlora", "quantization": "nf4", "lora_rank": 16, "micro_batch": 2,
                                "grad_accum": 8, "seq_len": 2048, "precision": "mixed-bf16"} == run.shape.known()
    assert [(e.kind, e.step, e.data["capacity_gib"]) for e in run.events] == [("oom", 10, 23.65)]


def test_llamafactory_corpus_log_without_token_counts(corpus):
    run = llamafactory.read(corpus / "jsonl/syGOAT__Mistral-v0.2-Translator-bf16/trainer_log.jsonl")
    assert "tokens_per_s" not in run.series and "tokens_seen" not in run.series  # logged as 0: not counted
    assert run.series["loss"].steps[-1] == 8660 and run.config["total_steps"] == 8660


def test_ms_swift_log_with_args_and_deepspeed_config(corpus):
    run = ms_swift.read(corpus / f"{SWIFT}p0_baseline_ds_prod_full_epoch/logging.jsonl")
    assert run.series["loss"].steps.tolist()[:3] == [1, 2, 3] and len(run.series["loss"]) == 294
    assert run.series["elapsed_s"].values[0] == 120  # "1m 60s"
    assert run.summary["mem_reserved_gib_max"] == pytest.approx(43.59, abs=1e-2)
    assert run.shape.known() | {"n_params": 25_805_933_900, "method": "full", "zero_stage": 3, "cpu_offload": True,
                                "micro_batch": 1, "grad_accum": 16, "seq_len": 16384, "attention": "flash",
                                "n_gpus": 8, "framework": "ms-swift"} == run.shape.known()
    assert run.shape.sources["zero_stage"] == "args.json"


def test_ms_swift_fsdp_config_beside_the_log(corpus):
    run = ms_swift.read(corpus / f"{SWIFT}run_mbs1_ga8_gbs32_offload/logging.jsonl")
    assert run.shape.known() | {"fsdp": "full_shard", "cpu_offload": True, "recompute": "full"} == run.shape.known()
    assert run.shape.sources["fsdp"] == "fsdp_override.json"


def test_ms_swift_older_speed_in_iterations_per_second(tmp_path):
    path = jsonl(tmp_path / "logging.jsonl", [
        {"loss": 1.5, "learning_rate": 1e-4, "global_step/max_steps": "10/100", "memory(GiB)": 20.5,
         "train_speed(iter/s)": 0.25, "elapsed_time": "40s"}])
    run = ms_swift.read(path)
    assert run.series["step_time_s"].values.tolist() == [4.0] and run.series["loss"].steps.tolist() == [10]


def test_megatron_golden_values_with_model_config(corpus, tmp_path):
    src = corpus / "jsonl/megatron_golden_values/gpt3_7b_tp1_pp4_memory_speed"
    run = megatron_golden.read(src / "golden_values_dev_dgx_h100.json")
    assert run.series["mem_peak_gib"].values[0] == pytest.approx(52931256320 / GIB)
    assert 1 not in run.series["step_time_s"].steps  # "nan" marks an unmeasured step: left out
    assert run.shape.known() | {"n_layers": 32, "pp": 4, "n_kv_heads": 8, "seq_len": 8192} == run.shape.known()


def test_gpu_sampler_jsonl_busiest_device_is_the_run_peak(corpus):
    run = gpu_sampler.read(corpus / f"{SWIFT}run_mbs1_ga8_gbs32_offload/gpu_metrics.jsonl")
    per_gpu = [run.series[f"mem_used_gib/gpu{i}"].values for i in range(8)]
    assert run.series["mem_used_gib"].values.tolist() == pytest.approx([max(v) for v in zip(*per_gpu, strict=True)])
    assert run.series["mem_used_gib"].wall_time is not None and run.shape.gpu_mem_gib == pytest.approx(79.65)


@pytest.mark.parametrize("units", [True, False])
def test_nvidia_smi_csv_query_output(tmp_path, units):
    unit, pct = (" [MiB]", " [%]") if units else ("", "")
    rows = [f"timestamp, index, name, memory.used{unit}, memory.total{unit}, utilization.gpu{pct}"]
    for second, used in ((1, (1200, 900)), (2, (40100, 38000))):
        for gpu, mib in enumerate(used):
            value = f"{mib} MiB, 81559 MiB, 97 %" if units else f"{mib}, 81559, 97"
            rows.append(f"2024/05/01 12:00:0{second}.123, {gpu}, NVIDIA H100 80GB HBM3, {value}")
    path = tmp_path / "smi.csv"
    path.write_text("\n".join(rows) + "\n")
    assert best_reader(path).name == "gpu_sampler"
    run = gpu_sampler.read(path)
    assert run.series["mem_used_gib"].values.tolist() == [1200 / 1024, 40100 / 1024]
    assert run.series["mem_used_gib/gpu1"].values.tolist() == [900 / 1024, 38000 / 1024]
    assert run.series["gpu_util_pct/gpu0"].values.tolist() == [97, 97]
    assert run.series["mem_used_gib"].wall_time[1] - run.series["mem_used_gib"].wall_time[0] == pytest.approx(1)


def test_ms_swift_run_folder_copy_keeps_its_sources(corpus, tmp_path):
    src = corpus / f"{SWIFT}p0_baseline_ds_prod_full_epoch"
    for name in ("logging.jsonl", "args.json"):
        shutil.copy(src / name, tmp_path)
    run = ms_swift.read(tmp_path / "logging.jsonl")
    assert {p.name for p in run.sources} == {"args.json"} and "cpu_offload" in run.shape.known()
