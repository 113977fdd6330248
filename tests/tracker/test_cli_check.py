"""``headroom check``: real configs in, fits or not out, with an exit status a launch script gates on."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CORPUS
from tracker.cli import main

CONFIGS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".json", ".yaml", ".yml")
                 and p.stat().st_size < 2_000_000) if CORPUS.is_dir() else []


def _check(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = main(["check", *args, "--no-history"])
    except SystemExit as exit_info:
        code = exit_info.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.skipif(not CONFIGS, reason="the corpus is not beside the checkout")
def test_every_corpus_config_gets_an_answer_or_a_one_line_error(capsys):
    answered = 0
    for path in CONFIGS:
        code, out, err = _check(capsys, str(path), "--model", "llama-3.1-8b", "--gpu", "h100",
                                "--json")
        assert code in (0, 1, 2), path
        if code == 2:
            assert err.startswith("headroom: error: ") and err.count("\n") == 1, (path, err)
        else:
            report = json.loads(out)
            assert report["fits"] == (code == 0) and report["device_gib"] > 0, path
            answered += 1
    assert answered >= 8  # TrainingArguments, DeepSpeed, FSDP, W&B, PEFT, Lightning, Megatron


@pytest.mark.skipif(not CONFIGS, reason="the corpus is not beside the checkout")
def test_a_deepspeed_path_in_training_arguments_is_read_beside_them(capsys):
    args = next(p for p in CONFIGS if p.name == "args.json")
    code, out, _ = _check(capsys, str(args), "--model", "llama-3.1-8b", "--gpu", "h100",
                          "--gpus", "8", "--json")
    layout = json.loads(out)["setup"]["layout"]
    assert (layout["zero"], layout["offload_optimizer"], layout["offload_params"]) == (3, True, True)


def test_an_exported_plan_checks_as_its_plan_said(tmp_path, capsys):
    path = tmp_path / "torchtune.yaml"
    plan = ["--model", "llama-3.1-8b", "--method", "lora", "--batch", "2", "--seq", "2048",
            "--gpu", "rtx-4090", "--gpus", "1", "--fit-to-card", "--framework", "torchtune"]
    assert main(["size", *plan, "--no-history", "--export", "torchtune", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["size", *plan, "--no-history", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["fit_to_card"]["best"]
    code, out, _ = _check(capsys, str(path), "--model", "llama-3.1-8b", "--gpu", "rtx-4090",
                          "--json")
    report = json.loads(out)
    assert code == 0 and report["fits"] and report["format"] == "torchtune"
    assert report["device_gib"] == pytest.approx(best["device_gib"], abs=0.01)
    # The same config for a bigger model does not fit: exit 1 stops the launch script.
    assert _check(capsys, str(path), "--model", "llama-3.1-70b", "--gpu", "rtx-4090")[0] == 1


def test_the_model_a_config_names_is_used_and_an_unknown_one_is_one_line(tmp_path, capsys):
    known = tmp_path / "axolotl.yaml"
    known.write_text("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nbf16: true\n"
                     "micro_batch_size: 1\nsequence_len: 1024\n")
    code, out, _ = _check(capsys, str(known), "--gpu", "h100", "--json")
    assert code == 0 and json.loads(out)["model"]["name"] == "llama-3.1-8b"
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("base_model: someone/Not-A-Model-9B\nmicro_batch_size: 1\n"
                       "sequence_len: 1024\n")
    for args, message in (([str(unknown), "--gpu", "h100"], "which is no preset"),
                          ([str(known), "--gpu", "no-such-gpu"], "unknown GPU"),
                          ([str(known), "--model", "no-such-model", "--gpu", "h100"], "unknown model"),
                          ([str(tmp_path / "missing.yaml"), "--gpu", "h100"], "no such config")):
        code, _, err = _check(capsys, *args)
        assert code == 2 and message in err and err.count("\n") == 1, (args, err)
