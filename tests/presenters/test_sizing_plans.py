"""The wizard's plans, headline and remembered choices as plain data (no Qt needed)."""

from __future__ import annotations

import pytest

from core.gpus import catalog
from core.memory import Setup
from core.models import preset
from core.planner import LEVELS, MARGIN
from core.sizing import Sizer, planned_setup
from desktop.presenters import memory_bars, sizing_plans, sizing_report
from desktop.presenters.sizing_form import REMEMBERED, Draft
from desktop.presenters.sizing_plans import BATCH, CHANGES, HOST_RAM, LAYOUT

RTX_4090, A100, H100 = (catalog()[n] for n in ("RTX 4090", "A100 80GB", "H100 SXM"))
QLORA_8B = (preset("llama-3.1-8b"), planned_setup("qlora", micro_batch=4, seq_len=4096))
FULL_70B = (preset("llama-3.1-70b"), planned_setup("full", micro_batch=1, seq_len=4096))
TOKENS = 41e6


def _plans(case, gpus, max_gpus=None):
    spec, setup = case
    return Sizer(spec).plans(setup, gpus, max_gpus)


def test_the_8b_qlora_on_a_4090_is_one_card_with_accumulation_in_the_first_section():
    plans = _plans(QLORA_8B, [RTX_4090, A100, H100])
    [keeps, *_] = sizing_plans.sections(plans, TOKENS)
    assert keeps.title == "Plans that keep the experiment"
    first = next(r for r in keeps.rows if r.plan.gpu == "RTX 4090")
    s = first.plan.setup
    assert first.plan.n_gpus == 1 and s.micro_batch <= 2 and s.micro_batch * s.grad_accum == 4
    assert first.plan.device_gib <= (1 - MARGIN) * RTX_4090.memory_gib
    assert first.cells[BATCH] == f"{s.micro_batch} × {s.grad_accum}"
    assert first.cells[CHANGES].startswith(f"micro batch 4 → {s.micro_batch} (accumulation "
                                           f"{s.grad_accum})")
    assert "= 4 samples per optimizer step" in first.tips[BATCH]


def test_the_70b_full_run_as_asked_on_many_nodes_comes_before_any_change_of_method():
    plans = _plans(FULL_70B, [H100])
    found = sizing_plans.sections(plans, TOKENS)
    assert [s.title for s in found] == ["Plans that keep the experiment",
                                        "If you can change the experiment"]
    as_asked = next(r for r in found[0].rows if r.cells[CHANGES] == "as asked")
    assert as_asked.plan.n_gpus >= 16 and as_asked.plan.nodes > 1
    assert as_asked.rank < min(r.rank for r in found[1].rows)
    offload = [r for r in found[0].rows if r.plan.setup.layout.offload_optimizer]
    assert offload and all(r.cells[HOST_RAM] == f"{r.plan.host_ram_gib:,.0f} GiB"
                           for r in offload)
    assert all("GiB of CPU memory per node" in r.tips[HOST_RAM] for r in offload)
    assert all(r.plan.level == LEVELS.index("changes the experiment") for r in found[1].rows)
    assert found[1].rows[0].cells[CHANGES].startswith("QLoRA instead of full fine-tuning")


@pytest.mark.parametrize("case", [QLORA_8B, FULL_70B,
                                  (preset("llama-3.1-8b"), planned_setup("full", "deepspeed"))])
def test_every_change_the_planner_words_is_shortened_and_every_cell_explained(case):
    plans = _plans(case, list(catalog().values()), 64)
    for section in sizing_plans.sections(plans, TOKENS):
        for row in section.rows:
            short = sizing_plans.short_changes(row.plan)
            assert not any("->" in s or "CPU memory" in s for s in short), short
            assert all(row.tips), row.cells  # no cell without a tooltip
            assert row.tips[LAYOUT].startswith(row.plan.layout)
            assert all(change in row.tips[CHANGES] for change in row.plan.changes)
            assert "nodes" not in row.cells[LAYOUT] and "GPU," not in row.cells[LAYOUT]


def test_card_mode_puts_more_cards_apart():
    plans = _plans(FULL_70B, [A100])
    answer = Sizer(FULL_70B[0]).fit_to_card(FULL_70B[1], A100, 1)
    assert not answer.fits and answer.more_cards and answer.changes
    shown = [answer.more_cards, *answer.changes]
    titles = [s.title for s in sizing_plans.sections(shown, TOKENS, ("A100 80GB", 1))]
    assert titles == ["With more A100 80GB cards", "If you can change the experiment"]
    assert plans  # the same engine answers both questions


def _bars(case, gpus):
    spec, setup = case
    return memory_bars.bars(Sizer(spec), memory_bars.asked(setup, gpus))


def test_the_headline_says_in_one_sentence_whether_it_fits_and_the_best_plan():
    bars = _bars(QLORA_8B, [RTX_4090, A100, H100])
    plans = _plans(QLORA_8B, [RTX_4090, A100, H100])
    said = sizing_plans.headline(bars, plans, TOKENS, planning=False, budget=None)
    closest = min(bars, key=lambda b: b.device_gib - b.capacity_gib)
    assert said.startswith("As asked it fits none of RTX 4090, A100 80GB and H100 SXM (the "
                           f"closest, A100 80GB, is short by "
                           f"{closest.device_gib - closest.capacity_gib:.1f} GiB); the best "
                           f"plan: 1 × {plans[0].gpu} with micro batch 4 → ")
    assert said.endswith(".") and ". " not in said and "; " in said  # one sentence
    small = Setup(method="qlora", precision="nf4", micro_batch=1, seq_len=1024)
    fits = memory_bars.bars(Sizer(QLORA_8B[0]), memory_bars.asked(small, [RTX_4090, H100]))
    said = sizing_plans.headline(fits, plans, TOKENS, planning=True, budget=None)
    free = [f"{b.capacity_gib - b.device_gib:.1f}" for b in fits]
    assert said == (f"As asked it fits on RTX 4090 with {free[0]} GiB free and H100 SXM with "
                    f"{free[1]} GiB free; looking for plans that fit…")
    assert sizing_plans.headline(bars, [], TOKENS, False, 8).endswith("no plan fits within 8 GPUs.")
    pick = sizing_plans.headline([], plans, TOKENS, False, None)
    assert pick.startswith(f"Headroom's pick: {plans[0].n_gpus} × {plans[0].gpu} ")


def test_card_mode_answers_with_the_knobs_or_the_smallest_change():
    answer = Sizer(QLORA_8B[0]).fit_to_card(QLORA_8B[1], RTX_4090, 1)
    said = sizing_plans.card_headline(answer, TOKENS)
    best = answer.best
    assert said.startswith("1 × RTX 4090 runs it with micro batch 4 → ")
    assert (f"the largest micro batch is {best.max_micro_batch:,} and the longest sequence "
            f"{best.max_seq_len:,} tokens") in said
    short = Sizer(FULL_70B[0]).fit_to_card(FULL_70B[1], A100, 1)
    said = sizing_plans.card_headline(short, TOKENS)
    assert said.startswith("1 × A100 80GB cannot keep this experiment; it fits if you change "
                           "to QLoRA instead of full fine-tuning")
    assert f"or it keeps the experiment on {short.more_cards.n_gpus} × A100 80GB" in said
    assert sizing_plans.card_headline(None, TOKENS).startswith("Looking for")


def test_the_token_budget_follows_the_method_and_the_data():
    draft = Draft(spec=preset("llama-3.1-8b"), seq_len=4096)
    draft.set_method("qlora")
    assert draft.tokens == 10_000 * 4096 and draft.data_line() == (
        "41M tokens: one epoch of 10,000 samples × 4,096 tokens")
    draft.samples, draft.sample_len, draft.epochs = 52_000, 512, 3
    assert draft.tokens == 52_000 * 512 * 3
    draft.data = "pretrain"  # only a full run pretrains
    assert draft.tokens == 52_000 * 512 * 3
    draft.set_method("full")
    draft.data = "pretrain"
    assert draft.tokens == 20 * draft.spec.total_params
    assert "20 per parameter (Chinchilla)" in draft.data_line()
    draft.pretrain_tokens = 15e12
    assert draft.tokens == 15e12 and draft.data_line() == "15T tokens of pretraining"
    draft.set_method("lora")
    assert draft.data == "finetune"


def test_remembered_choices_come_back_and_junk_is_ignored():
    draft = Draft(method="qlora", precision="nf4", micro_batch=2, seq_len=8192, mode="card",
                  card="H100 SXM", card_count=2, source="params", source_value="7B",
                  samples=123, pretrain_tokens=1e12)
    values = draft.remembered()
    assert set(values) == set(REMEMBERED)
    again = Draft()
    again.recall(values)
    assert again.remembered() == values
    again.recall({"method": "dreaming", "micro_batch": "four", "card": "Abacus", "spec": 1,
                  "seq_len": 1024, "pretrain_tokens": 5, "source": "run"})
    assert (again.method, again.micro_batch, again.card, again.spec) == ("qlora", 2, "H100 SXM",
                                                                         None)
    assert again.seq_len == 1024 and again.pretrain_tokens == 5.0 and again.source == "params"


def test_the_report_leads_with_the_headline_and_keeps_the_sections():
    draft = Draft(spec=QLORA_8B[0], method="qlora", precision="nf4", micro_batch=4,
                  seq_len=4096, gpus=["RTX 4090", "H100 SXM"])
    plans = _plans(QLORA_8B, [RTX_4090, H100])
    bars = _bars(QLORA_8B, [RTX_4090, H100])
    outcome = sizing_report.Outcome(draft, bars, bars[0], "no history", plans, {}, "It fits.")
    report = sizing_report.blocks(outcome)
    assert ("p", "It fits.") in report
    assert ("h3", "Plans that keep the experiment") in report
    assert ("Data", draft.data_line()) in report[2][2]
    text = sizing_report.text(report)
    assert "Micro × accum" in text and "as asked" in text
