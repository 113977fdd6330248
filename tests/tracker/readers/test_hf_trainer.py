"""HF Trainer reader: on every corpus trainer_state/output folder and on a real Trainer run."""

from __future__ import annotations

import json
import shutil

import pytest

from tracker.ingest import ingest
from tracker.readers import best_reader

# Corpus folder -> (series that must be present, last loss step, shape fields it states)
CORPUS_RUNS = {
    "Dheena731__tinyLlama-finetune": ({"loss", "eval_loss", "lr", "grad_norm", "tokens_seen"}, 2790, {"method": "lora", "lora_rank": 8}),
    "DigitalIntelligenceCenter-of-ICMM__Baize-TCM-LLM": ({"loss", "lr", "grad_norm"}, 6687, {}),
    "Jaong__Checkpoint-of-CPT": ({"loss", "eval_loss", "eval/rouge-1", "predict_loss"}, 5000, {}),
    "One-eyed-warrior__lora-finetuning": ({"loss", "lr"}, 250, {"method": "qlora", "lora_rank": 16}),
    "P4P4N1CK__whisper-large-v2-japanese-5k-steps": ({"loss", "eval_loss", "eval/wer"}, 5000, {}),
    "Ray-Cheng-11__Tau-Bench-Model-Training": ({"loss", "reward", "kl"}, 10, {}),
    "aigoncharov__trainer_state_viz": ({"loss", "eval/g0_loss", "eval/g5_accuracy"}, 12030, {}),
    "ananyakaligal__Gemma2B-Finetuning": ({"loss", "eval_loss"}, 68500, {}),
    "syGOAT__Mistral-v0.2-Translator-bf16": ({"loss", "lr", "grad_norm"}, 8660, {}),
    "tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs": ({"loss", "eval_loss"}, 3750, {"method": "lora"}),
}


@pytest.mark.parametrize("folder", sorted(CORPUS_RUNS))
def test_every_corpus_output_folder_ingests(store, corpus, folder):
    expected, last_step, shape = CORPUS_RUNS[folder]
    report = ingest(store, [corpus / "hf_trainer" / folder])
    assert [r.status for r in report.results] == ["ingested"], report.results
    run = store.run(report.results[0].run_id)
    assert run.format == "hf_trainer"
    assert expected <= set(run.series), sorted(run.series)
    assert run.series["loss"].last_step == last_step
    for name, value in shape.items():
        assert getattr(run.shape, name) == value, name


def test_final_summary_row_is_a_summary_not_a_series(store, corpus):
    report = ingest(store, [corpus / "hf_trainer/syGOAT__Mistral-v0.2-Translator-bf16/trainer_state.json"])
    run_id = report.results[0].run_id
    assert "train_runtime" not in store.run(run_id).series
    loss = store.series(run_id, "loss")
    assert loss.steps[0] == 10 and len(loss) == 866


def test_folder_picks_the_trainer_state_with_most_steps(tmp_path, corpus):
    src = corpus / "hf_trainer/syGOAT__Mistral-v0.2-Translator-bf16"
    folder = tmp_path / "run"
    (folder / "checkpoint-500").mkdir(parents=True)
    shutil.copy(src / "checkpoint-500/trainer_state.json", folder / "checkpoint-500")
    from tracker.readers.hf_trainer import read

    assert read(folder).series["loss"].steps[-1] == 500
    shutil.copy(src / "trainer_state.json", folder)
    assert read(folder).series["loss"].steps[-1] == 8660


def test_log_history_dump_and_results_files_are_recognised(corpus):
    base = corpus / "hf_trainer/tasfiahmrinmoyee__Gemma3-1B-Instruct-outputs"
    assert best_reader(base / "training_logs.json").name == "hf_trainer"
    assert best_reader(corpus / "hf_trainer/syGOAT__Mistral-v0.2-Translator-bf16/all_results.json").name == "hf_trainer"


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.producers import train_hf

    return train_hf(tmp_path_factory.mktemp("hf") / "out", steps=12, eval_steps=4, save_steps=4)


def test_real_trainer_output_folder(store, hf_run):
    report = ingest(store, [hf_run])
    assert [r.status for r in report.results] == ["ingested"]
    run = store.run(report.results[0].run_id)
    assert {"loss", "eval_loss", "lr", "grad_norm", "epoch"} <= set(run.series)
    assert run.series["loss"].last_step == 12 and run.series["eval_loss"].count == 3
    assert (run.shape.n_layers, run.shape.hidden, run.shape.vocab) == (2, 32, 64)
    assert run.shape.sources["n_layers"].endswith("config.json")
    assert run.shape.micro_batch == 4
    state = json.loads((hf_run / "trainer_state.json").read_text())
    losses = [row["loss"] for row in state["log_history"] if "loss" in row]
    assert store.series(run.id, "loss").values.tolist() == pytest.approx(losses)


def test_real_trainer_state_rewritten_with_more_steps_appends(store, hf_run, tmp_path):
    folder = tmp_path / "live"
    shutil.copytree(hf_run, folder)
    state_path = folder / "trainer_state.json"
    state = json.loads(state_path.read_text())
    full = state["log_history"]
    state["log_history"] = [row for row in full if row.get("step", 0) <= 8]
    state_path.write_text(json.dumps(state))
    first = ingest(store, [folder]).results[0]
    state["log_history"] = full
    state_path.write_text(json.dumps(state))
    second = ingest(store, [folder]).results[0]
    assert second.status == "updated" and second.run_id == first.run_id
    assert store.run(first.run_id).series["loss"].last_step == 12


def test_rows_carrying_train_runtime_are_steps_not_the_summary(store, tmp_path):
    pytest.importorskip("transformers")
    from tests.producers import train_hf

    out = train_hf(tmp_path / "tok", steps=6, eval_steps=3, save_steps=6,
                   include_num_input_tokens_seen=True)
    run = store.run(ingest(store, [out]).results[0].run_id)
    assert run.series["loss"].count == 3 and run.series["tokens_seen"].last == 384
    assert "tokens_per_s" in run.series
    assert run.series["loss"].last_step == 6
