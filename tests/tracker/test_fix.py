"""``headroom fix``: a real tiny run that ran out of a (fake) card, and the changes that fit it."""

from __future__ import annotations

import json

import pytest

from tests.fake_gpu import as_recorders_memory, fake_device
from tests.producers import tiny_gpt2_config
from tracker.cli import main
from tracker.ingest import ingest
from tracker.record import Recorder

# GPT-2's vocabulary on a 2-layer model: the logits dominate, as they do in real fine-tunes.
CAPACITY_GIB, MICRO, ACCUM, SEQ, VOCAB = 1.5, 16, 2, 256, 50257
CARD = "Test GPU 1.5 GiB"


def _train_until_oom(path, monkeypatch) -> None:
    """A tiny GPT-2 trained with the Recorder on a fake 1.5 GiB card: its first step runs out."""
    import torch
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(tiny_gpt2_config(vocab=VOCAB, hidden=64, positions=SEQ))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    device = fake_device(CAPACITY_GIB, list(model.parameters()))
    as_recorders_memory(monkeypatch, device, CARD)
    shape = {"micro_batch": MICRO, "grad_accum": ACCUM, "seq_len": SEQ}
    with pytest.raises(torch.OutOfMemoryError):
        with Recorder(path, model=model, optimizer=optimizer, every=1, shape=shape) as rec, device:
            for step in range(1, 4):
                for _ in range(ACCUM):
                    x = torch.randint(0, VOCAB, (MICRO, SEQ))
                    (model(input_ids=x, labels=x).loss / ACCUM).backward()
                optimizer.step()
                optimizer.zero_grad()
                rec.step(step, batch=x)


@pytest.mark.slow
def test_a_run_that_ran_out_of_its_card_gets_fixes_that_fit_it(store, tmp_path, monkeypatch,
                                                                capsys):
    path = tmp_path / "oom" / "headroom.jsonl"
    _train_until_oom(path, monkeypatch)
    run_id = ingest(store, [path.parent]).results[0].run_id
    [oom] = store.events(run_id, ["oom"])
    assert oom.data["capacity_gib"] == pytest.approx(CAPACITY_GIB, abs=0.01)
    assert oom.data["tried_gib"] > oom.data["free_gib"] > 0  # the allocation that failed
    assert main(["fix", str(run_id), "--json", "--db", str(tmp_path / "test.db")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gpu"] == CARD and report["global_batch"] == MICRO * ACCUM
    assert report["failure"]["needed_gib"] > CAPACITY_GIB  # the OOM is a lower bound
    fixes = report["fixes"]
    assert fixes and all(f["fits"] and f["device_gib"] <= 0.85 * f["capacity_gib"] for f in fixes)
    first = fixes[0]
    assert first["rung"] == "micro batch" and first["gpu"] == CARD and first["gpus"] == 1
    assert first["global_batch"] == MICRO * ACCUM and first["micro_batch"] < MICRO
    assert first["export"]["plan_hash"] in first["export"]["text"]


def test_a_run_without_an_oom_is_refused_in_one_line(store, tmp_path, capsys):
    import torch

    path = tmp_path / "fine" / "headroom.jsonl"
    with Recorder(path, model=torch.nn.Linear(4, 4)) as rec:
        rec.step(10, loss=1.0)
    run_id = ingest(store, [path.parent]).results[0].run_id
    with pytest.raises(SystemExit) as exit_info:
        main(["fix", str(run_id), "--db", str(tmp_path / "test.db")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no GPU out-of-memory event" in err
