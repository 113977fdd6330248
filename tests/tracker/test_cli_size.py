"""``headroom size``: the report, its JSON fields, and exit status 2 for bad values."""

from __future__ import annotations

import json

import pytest

from core.memory import COMPONENTS
from tracker.cli import main


def _size(capsys, *args: str) -> dict:
    assert main(["size", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_holds_breakdown_readings_fits_and_plans(capsys):
    out = _size(capsys, "--model", "llama-3.1-8b", "--method", "lora", "--batch", "2",
                "--seq", "4096", "--gpu", "h100")
    assert set(out["breakdown_gib"]) == set(COMPONENTS)
    assert out["allocated_gib"] < out["reserved_gib"] < out["device_gib"]
    assert out["calibrated"] is None  # no recorded runs in this fresh home
    assert len(out["fits"]) >= 22 and {"gpu", "fits", "headroom_gib", "max_micro_batch"} <= set(
        out["fits"][0])
    assert out["plans"] and all(p["gpu"] == "H100 SXM" for p in out["plans"])
    assert out["model"]["params"] == 8_030_261_248


def test_bigger_batches_need_more_and_recompute_needs_less(capsys):
    base = _size(capsys, "--model", "qwen2.5-7b", "--batch", "1")["allocated_gib"]
    bigger = _size(capsys, "--model", "qwen2.5-7b", "--batch", "4")["allocated_gib"]
    saved = _size(capsys, "--model", "qwen2.5-7b", "--batch", "4",
                  "--grad-checkpointing")["allocated_gib"]
    assert base < bigger and saved < bigger


def test_params_and_architecture_options(capsys):
    out = _size(capsys, "--params", "7B", "--method", "qlora")
    assert "nearest preset" in " ".join(out["notes"])
    custom = _size(capsys, "--layers", "12", "--hidden", "768", "--heads", "12", "--vocab",
                   "50257", "--method", "inference")
    assert custom["model"]["layers"] == 12 and custom["breakdown_gib"]["kv_cache"] > 0


def test_config_json_path(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 128, "intermediate_size": 344,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1000}))
    out = _size(capsys, "--config", str(tmp_path), "--no-history")
    assert out["model"]["kv_heads"] == 2 and out["model"]["params"] > 0


def test_text_report_and_lists(capsys):
    assert main(["size", "--model", "gpt2", "--gpu", "4090"]) == 0
    text = capsys.readouterr().out
    assert "allocated" in text and "RTX 4090" in text and "weights" in text
    assert main(["size", "--list-models"]) == 0 and "llama-3.1-8b" in capsys.readouterr().out
    assert main(["size", "--list-gpus"]) == 0 and "MI300X" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "llama-3.1-8b", "--method", "qlora", "--precision", "fp32"], "QLoRA"),
    (["--model", "llama-3.1-8b", "--tp", "3", "--gpus", "3"], "does not divide"),
    (["--model", "llama-3.1-8b", "--gpu", "no-such-gpu"], "unknown GPU"),
    (["--model", "no-such-model"], "unknown model"),
    (["--method", "full"], "give --model"),
    (["--model", "llama-3.1-8b", "--method", "inference", "--optimizer", "adamw"], "no optimizer"),
])
def test_contradictions_exit_2_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["size", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("args", [["--gpus", "0"], ["--batch", "-1"], ["--params", "lots"],
                                  ["--zero", "5"], ["--no-such-option"], ["--margin", "2"]])
def test_out_of_range_values_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["size", "--model", "gpt2", *args])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("card", ["rtx-3090", "rtx-4090", "rtx-5090", "l40s", "a100 80gb"])
def test_fit_to_card_answers_for_common_cards(card, capsys):
    assert main(["size", "--model", "llama-3.1-8b", "--method", "qlora", "--batch", "4",
                 "--seq", "4096", "--gpu", card, "--gpus", "1", "--fit-to-card", "--json",
                 "--no-history"]) == 0
    answer = json.loads(capsys.readouterr().out)["fit_to_card"]
    assert answer["fits"] and answer["gpus"] == 1
    best = answer["best"]
    assert best["gpus"] == 1 and best["micro_batch"] * best["grad_accum"] == 4
    assert best["device_gib"] <= 0.85 * best["capacity_gib"]
    assert answer["max_micro_batch"] >= best["micro_batch"] and answer["max_seq_len"] >= 4096


def test_fit_to_card_names_the_smallest_change_when_nothing_fits(capsys):
    assert main(["size", "--model", "llama-3.1-70b", "--method", "full", "--seq", "4096",
                 "--gpu", "rtx-4090", "--gpus", "1", "--fit-to-card", "--json",
                 "--no-history"]) == 0
    answer = json.loads(capsys.readouterr().out)["fit_to_card"]
    assert not answer["fits"] and answer["best"] is None
    assert answer["if_you_change"] or answer["more_cards"]
    if answer["more_cards"]:
        assert answer["more_cards"]["gpus"] > 1


def test_plans_state_gpus_nodes_batch_method_optimizer_host_ram_and_cost(capsys):
    assert main(["size", "--model", "llama-3.1-70b", "--method", "full", "--seq", "4096",
                 "--gpu", "h100", "--tokens", "1e9", "--json", "--no-history"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    keys = {"gpus", "nodes", "micro_batch", "grad_accum", "method", "optimizer", "host_ram_gib",
            "cost", "level", "summary"}
    assert plans and all(keys <= set(p) for p in plans)
    as_asked = next(p for p in plans if p["summary"] == "as asked")
    assert as_asked["gpus"] >= 16 and as_asked["nodes"] >= 2 and as_asked["cost"] > 0
