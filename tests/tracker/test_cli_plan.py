"""``headroom plan``: per-stage figures and totals per variant, tables, storing, one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from tracker.cli import main

CNC = ROOT / "resources" / "projects" / "cnc-maintenance.toml"
STAGE_KEYS = {"layout", "gib_per_gpu", "hours", "gpu_hours", "cost", "gpu", "gpus", "status",
              "tokens_per_s", "mfu", "memory", "hours_low", "hours_high", "pilot", "options"}
TOTAL_KEYS = {"hours", "days", "gpu_hours", "gpu_days", "cost", "longest_stage",
              "peak_gib_per_gpu", "cards", "meets_deadline", "within_budget"}


def _plan(capsys, *args: str, code: int = 0) -> dict:
    assert main(["plan", *args, "--json"]) == code
    return json.loads(capsys.readouterr().out)


def _status(*args: str) -> int:
    """The exit status of ``headroom plan ARGS`` (errors exit through SystemExit)."""
    try:
        return main(["plan", *args])
    except SystemExit as stop:
        return stop.code


def test_cnc_example_gives_per_stage_figures_and_totals_per_variant(capsys):
    out = _plan(capsys, str(CNC))
    assert out["project"] == "CNC maintenance assistant" and out["errors"] == []
    assert [v["name"] for v in out["variants"]] == [
        "7B base, LoRA", "13B base, LoRA", "one 30B generalist", "three specialists"]
    for variant in out["variants"]:
        assert TOTAL_KEYS <= set(variant["totals"])
        stages = variant["stages"]
        for s in stages:
            assert STAGE_KEYS <= set(s), sorted(STAGE_KEYS - set(s))
            assert 0 < s["gib_per_gpu"] <= 0.85 * s["capacity_gib"]
            assert s["gpu_hours"] == pytest.approx(s["hours"] * s["gpus"], rel=1e-3)
            assert s["hours_low"] < s["hours"] < s["hours_high"]
        totals = variant["totals"]
        assert totals["gpu_hours"] == pytest.approx(sum(s["gpu_hours"] for s in stages), rel=1e-3)
        assert totals["cost"] == pytest.approx(sum(s["cost"] for s in stages), rel=1e-3)
        assert totals["gpu_days"] == pytest.approx(totals["gpu_hours"] / 24, rel=1e-3)
        assert variant["purchases"] and variant["purchases"][0]["week"] == 1
    lora = out["variants"][0]
    assert {s["gpu"] for s in lora["stages"]} == {"RTX 4090"}  # §4.4: LoRA on 24 GB cards
    assert lora["purchases"][0]["buy_usd"] == 4 * 1900
    assert out["variants"][2]["totals"]["cards"] == {"H100 SXM": 16}


def test_text_mode_shows_stages_and_the_variants_side_by_side(capsys):
    assert main(["plan", str(CNC), "--pilots"]) == 0
    text = capsys.readouterr().out
    assert "Variants side by side" in text and "GPU-days" in text and "cards needed" in text
    assert "domain adaptation" in text and "pilot for domain adaptation: qwen2.5-0.5b" in text
    assert "(owned) from week 1" in text
    one_variant = _plan(capsys, str(CNC), "--variant", "three specialists")
    assert [v["name"] for v in one_variant["variants"]] == ["three specialists"]


@pytest.mark.parametrize(("edit", "says"), [
    (('model = "qwen2.5-7b"', 'model = "qwen9-7b"'),
     'stage "domain adaptation" in variant "7B base, LoRA", field "model": unknown model'),
    (('tokens = "60M"', "tokens = 0"),
     'stage "domain adaptation" in variant "7B base, LoRA", field "tokens"'),
    (("epochs = 2", "epoch = 2"), 'field "epoch": unknown field (did you mean \'epochs\'?)'),
    (('seq_len = 2048', 'seq_len = "2048'), "not valid TOML"),
])
def test_bad_input_is_one_line_naming_stage_and_field(tmp_path, capsys, edit, says):
    path = tmp_path / "cnc.toml"
    path.write_text(CNC.read_text().replace(*edit, 1))
    assert _status(str(path)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("headroom: error: cnc.toml: ")
    assert says in err


def test_a_stage_no_pool_card_holds_is_one_line_and_the_rest_is_planned(tmp_path, capsys):
    text = CNC.read_text().replace('model = "qwen2.5-32b"', 'model = "llama-3.1-405b"')
    text = text.replace("count = 16", "count = 8\nhost_ram_gib = 256")
    path = tmp_path / "cnc.toml"
    path.write_text(text)
    assert main(["plan", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    out, err = json.loads(captured.out), [line for line in captured.err.splitlines() if line]
    assert len(err) == 1 and 'stage "all-in-one fine-tune" in variant "one 30B generalist", ' \
                              'field "model": llama-3.1-405b full fits on no pool card' in err[0]
    generalist = out["variants"][2]
    assert generalist["stages"][0]["fits"] is False and generalist["stages"][0]["would_fit"]
    assert generalist["totals"]["complete"] is False and generalist["totals"]["cost"] is None
    assert all(s["fits"] for v in out["variants"][:2] + out["variants"][3:] for s in v["stages"])


def test_stored_projects_are_listed_planned_by_name_and_linked(store, tmp_path, capsys):
    db = store.url
    _plan(capsys, str(CNC), "--db", db, "--save")
    assert main(["plan", "--list", "--db", db, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in listed] == ["CNC maintenance assistant"]
    by_name = _plan(capsys, "CNC maintenance assistant", "--db", db)
    assert by_name["stored_id"] == listed[0]["id"]
    assert _status(str(CNC), "--db", db, "--link-pilot", "tool use", "12") == 2
    assert "several variants" in capsys.readouterr().err
    assert _status(str(CNC), "--db", db, "--link-pilot", "7B base, LoRA/tool use", "12") == 2
    assert "no run with id 12" in capsys.readouterr().err
