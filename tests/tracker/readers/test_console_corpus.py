"""Every console, trainer-JSONL and sampler log of the corpus: the right reader, the right metrics.

The table lists, per corpus file, the format that must be detected and the
series that must be present because the file has them (memory, throughput,
LR, batch, loss). A sniff matrix checks that no console reader claims another
reader's file.
"""

from __future__ import annotations

import json

import pytest

from tracker.cli import main
from tracker.ingest import ingest
from tracker.readers import READERS, best_reader

MEGATRON_LM = "text_logs/megatron_lm/elena-lyulina__Megatron-LM-Attention-Benchmark/3108079.out"
MEGATRON_DS = "text_logs/megatron_deepspeed/stark-sim__megatron-deepspeed-lock-clock/qwen7b_baseline_500.log"
SWIFT = "jsonl/ms_swift/fyh2001__megatron-sft-recipes__"
GOLDEN = "jsonl/megatron_golden_values/"

# corpus file -> (format, series that must be present in its (last) run)
EXPECTED = {
    MEGATRON_LM: ("megatron", {"loss", "lr", "batch_size", "step_time_s", "tflops", "samples_seen",
                               "grad_norm", "loss_scale", "mem_peak_gib", "mem_reserved_gib"}),
    MEGATRON_DS: ("megatron", {"loss", "lr", "batch_size", "step_time_s", "tflops", "samples_seen",
                               "tokens_seen", "samples_per_s", "eval_loss", "mem_peak_gib",
                               "mem_reserved_gib", "mem_peak_gib/rank3", "host_mem_used_gib"}),
    "text_logs/modded_nanogpt/2024-06-06_AdamW/f66d43d7-e449-4029-8adf-e8537bab49ea.log":
        ("nanogpt", {"loss", "eval_loss"}),
    "text_logs/modded_nanogpt/2024-10-13_llmc/main.log": ("nanogpt", {"loss", "eval_loss", "lr", "grad_norm"}),
    "text_logs/modded_nanogpt/2025-09-10_Yarn/9121a353-d3ce-4f54-98de-0b466773fe0b.txt":
        ("nanogpt", {"eval_loss", "step_time_s", "mem_peak_gib", "mem_reserved_gib"}),
    "wandb/jackokeefe11__nanoGPT/run-20240214_195452-kt2awly2/files/output.log":
        ("nanogpt", {"loss", "eval_loss", "step_time_s", "mfu"}),
    "text_logs/hf_trainer_console/Jaong__Checkpoint-of-CPT__cmd.txt":
        ("hf_console", {"loss", "lr", "grad_norm", "epoch", "eval_loss"}),
    "text_logs/ms_swift/fyh2001__megatron-sft-recipes__p0_baseline_ds_prod_full_epoch/stdout.log":
        ("hf_console", {"loss", "lr", "grad_norm", "tokens_per_s", "mem_reserved_gib", "step_time_s"}),
    "text_logs/custom/0Xero7__slm_training__classic.txt": ("console", {"loss", "eval_loss", "lr"}),
    f"{SWIFT}p0_baseline_ds_prod_full_epoch/logging.jsonl":
        ("ms_swift", {"loss", "lr", "grad_norm", "tokens_per_s", "mem_reserved_gib", "step_time_s"}),
    f"{SWIFT}run_mbs1_ga8_gbs32_offload/logging.jsonl":
        ("ms_swift", {"loss", "lr", "tokens_per_s", "mem_reserved_gib", "step_time_s"}),
    f"{SWIFT}run_mbs1_ga8_gbs32_offload/gpu_metrics.jsonl":
        ("gpu_sampler", {"mem_used_gib", "mem_used_gib/gpu0", "mem_used_gib/gpu7", "gpu_util_pct/gpu0"}),
    "jsonl/syGOAT__Mistral-v0.2-Translator-bf16/trainer_log.jsonl": ("llamafactory", {"loss", "lr", "epoch"}),
    f"{GOLDEN}gpt3_15b_8t_release_sm/golden_values_dev_dgx_h100.json":
        ("megatron_golden", {"loss", "mem_peak_gib", "step_time_s"}),
    f"{GOLDEN}gpt3_7b_tp1_pp4_memory_speed/golden_values_dev_dgx_h100.json":
        ("megatron_golden", {"loss", "mem_peak_gib", "step_time_s"}),
    f"{GOLDEN}bert_mcore_tp1_pp2/golden_values_dev_dgx_h100.json": ("megatron_golden", {"loss", "mem_peak_gib"}),
}
MINE = {fmt for fmt, _ in EXPECTED.values()} | {"deepspeed", "torchtitan"}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_log_ingests_with_its_metrics(store, corpus, relative):
    fmt, expected = EXPECTED[relative]
    assert best_reader(corpus / relative).name == fmt
    report = ingest(store, [corpus / relative])
    assert report.ok and {r.status for r in report.results} == {"ingested"}, report.results
    run = store.run(report.results[-1].run_id)
    assert run.format == fmt
    assert expected <= set(run.series), sorted(set(expected) - set(run.series))


def test_sniff_matrix_no_console_reader_claims_other_files(corpus):
    """The right reader wins each file above; on every other corpus file no reader of this issue wins."""
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"):
        relative = str(path.relative_to(corpus))
        winner = best_reader(path)
        if relative in EXPECTED:
            ranked = sorted(((r.sniff(path), r.name) for r in READERS), reverse=True)
            assert ranked[0][1] == EXPECTED[relative][0], (relative, ranked[:3])
            assert ranked[0][0] > ranked[1][0], (relative, ranked[:3])
        else:
            assert winner is None or winner.name not in MINE, (relative, winner.name)


def test_megatron_runs_fill_their_shape_from_the_arguments_dump(store, corpus, capsys):
    ingest(store, [corpus / MEGATRON_LM, corpus / MEGATRON_DS])
    capsys.readouterr()
    assert main(["runs", "--json", "--db", store.url]) == 0
    runs = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    llama = runs["3108079 #2"]["shape"]  # the main run, after a 2-iteration warm-up run
    assert llama | {"n_layers": 16, "hidden": 2048, "n_heads": 32, "n_kv_heads": 8, "seq_len": 8192,
                    "micro_batch": 3, "global_batch": 288, "tp": 1, "pp": 1, "n_gpus": 32,
                    "precision": "mixed-bf16", "zero_stage": 1, "vocab": 128256} == llama
    assert runs["3108079 #2"]["shape_sources"]["n_layers"] == "Megatron arguments"
    qwen = runs["qwen7b_baseline_500"]["shape"]
    assert qwen | {"n_layers": 28, "hidden": 3584, "n_kv_heads": 4, "intermediate": 18944, "tp": 4,
                   "recompute": "full", "zero_stage": 1, "framework": "megatron-deepspeed",
                   "grad_accum": 4} == qwen
    assert runs["qwen7b_baseline_500"]["metrics"]["mem_peak_gib"]["max"] == pytest.approx(12506.68 / 1024,
                                                                                          abs=1e-3)


def test_warm_up_and_main_run_in_one_slurm_file_are_two_runs(corpus):
    logs = best_reader(corpus / MEGATRON_LM).read(corpus / MEGATRON_LM)
    assert [log.key for log in logs] == ["1", "2"]
    warm_up, main_run = logs
    assert warm_up.series["loss"].steps.tolist() == [1, 2]
    assert main_run.series["loss"].steps[0] == 1 and main_run.series["loss"].steps[-1] == 416
    assert main_run.config["args"]["lr_warmup_iters"] == 500 and warm_up.config["args"]["lr_warmup_iters"] == 1
    # Megatron's own prediction, kept beside the measured peak
    assert main_run.summary["megatron_predicted_total_gib"] == pytest.approx(40974.20 / 1024, abs=1e-3)
    assert main_run.series["mem_reserved_gib"].values.max() == pytest.approx(81662.0 / 1024)
    assert main_run.config["memory_peaks"]["mem_peak_gib"] == "cumulative"
