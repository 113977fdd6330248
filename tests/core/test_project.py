"""Projects: reading TOML with one-line errors, planning stages on a pool, variants, purchases."""

from __future__ import annotations

import pytest

from core.pilot import choose_model
from core.project import ProjectError, load, loads
from core.project_plan import plan_project, stage_status
from tests.conftest import ROOT

PROJECTS = ROOT / "resources" / "projects"

POOL = """
[project]
name = "p"
{head}

[[pool]]
gpu = "RTX 4090"
count = 4
owned = true
host_ram_gib = 128

[[pool]]
gpu = "H100 SXM"
count = 16
"""


def project(stages: str, head: str = "", variant: str = "v") -> str:
    return POOL.format(head=head) + f'\n[[variant]]\nname = "{variant}"\n' + stages


def stage(name: str = "s", **fields) -> str:
    fields = {"model": "qwen2.5-7b", "method": "lora", "tokens": "10M", **fields}
    body = "\n".join(f"{k} = {_toml(v)}" for k, v in fields.items() if v is not None)
    return f'[[variant.stage]]\nname = "{name}"\n{body}\n'


def error(text: str) -> str:
    with pytest.raises(ProjectError) as caught:
        loads(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("fields", "field", "says"), [
    ({"model": "qwen9-7b"}, "model", "unknown model 'qwen9-7b'"),
    ({"tokens": 0}, "tokens", "no data"),
    ({"tokens": "lots"}, "tokens", "not a count"),
    ({"samples": 0, "tokens": None}, "samples", "at least 1"),
    ({"epoch": 2}, "epoch", "did you mean 'epochs'"),
    ({"method": "dpo"}, "method", "not one of full, lora, qlora"),
    ({"precision": "nf4"}, "precision", 'method = "qlora"'),
    ({"after": ["later"]}, "after", "no stage 'later' before this one"),
    ({"gpu": "H200"}, "gpu", "not in the pool"),
    ({"config": "missing/config.json"}, "model", "give only one of"),
])
def test_bad_stage_fields_are_one_line_naming_the_stage_and_field(fields, field, says):
    message = error(project(stage("domain", **fields)))
    assert f'stage "domain" in variant "v", field "{field}"' in message
    assert says in message


def _toml(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return str(value)


def test_toml_syntax_and_project_level_mistakes():
    assert "not valid TOML" in error(project(stage()) + 'oops = "unterminated\n')
    assert "line" in error(project(stage()) + 'oops = "unterminated\n')
    assert 'field "cuont"' in error(project(stage()).replace("count = 4", "cuont = 4"))
    assert "did you mean 'count'" in error(project(stage()).replace("count = 4", "cuont = 4"))
    assert "no [[pool]] entries" in error('[project]\nname = "p"\n[[variant]]\nname = "v"\n'
                                          + stage())
    assert "not in the catalog" in error(project(stage()).replace('"RTX 4090"', '"GTX 280"'))
    assert "two stages have this name" in error(project(stage() + stage()))
    assert 'table "variants"' in error(project(stage()).replace("[[variant]]", "[[variants]]")
                                        .replace("[[variant.stage]]", "[[variants.stage]]"))


def test_samples_times_length_and_epochs_give_the_tokens():
    p = loads(project(stage(samples=30000, sample_len=600, epochs=3, tokens=None)))
    s = p.variants[0].stages[0]
    assert s.tokens == 30000 * 600 and s.total_tokens == 3 * 30000 * 600


def test_a_card_of_your_own_needs_its_memory_and_speed():
    text = project(stage(gpu="lab box")).replace(
        'gpu = "H100 SXM"\ncount = 16', 'gpu = "lab box"\ncount = 2\nmemory_gib = 48\n'
                                        'bf16_tflops = 150\nusd_per_hour = 0')
    p = loads(text)
    card = p.card("lab box")
    assert card.gpu.memory_gib == 48 and card.gpu.bf16_tflops == 150 and card.count == 2
    assert "memory_gib and bf16_tflops" in error(text.replace("memory_gib = 48\n", ""))


def test_the_examples_plan_every_stage_with_its_figures():
    for path in sorted(PROJECTS.glob("*.toml")):
        plan = plan_project(load(path))
        assert plan.errors == [], path.name
        for variant in plan.variants:
            assert variant.complete
            for sp in variant.stages:
                p = sp.plan
                assert p.device_gib <= 0.85 * p.capacity_gib + 1e-9  # the margin kept free
                assert sp.hours == pytest.approx(sp.stage.total_tokens / p.tokens_per_s / 3600)
                assert sp.gpu_hours == pytest.approx(sp.hours * p.n_gpus)
                assert sp.cost == pytest.approx(sp.gpu_hours * sp.plan.usd_per_hour / p.n_gpus)
                low, high = sp.hours_range
                assert low < sp.hours < high
            assert variant.gpu_hours == pytest.approx(sum(s.gpu_hours for s in variant.stages))
            assert variant.cost == pytest.approx(sum(s.cost for s in variant.stages))


def test_cnc_example_uses_the_owned_cards_and_the_generalist_needs_rented_ones():
    plan = plan_project(load(PROJECTS / "cnc-maintenance.toml"))
    by_name = {v.name: v for v in plan.variants}
    assert set(by_name["7B base, LoRA"].cards) == {"RTX 4090"}  # §4.4: 24 GB cards and LoRA
    assert set(by_name["one 30B generalist"].cards) == {"H100 SXM"}
    specialists = by_name["three specialists"]
    # Side by side they wait for each other's cards: 4 cards, each stage uses all 4.
    spans = sorted((s.start_h, s.end_h) for s in specialists.stages)
    assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:], strict=False))
    seven = by_name["7B base, LoRA"]
    starts = [s.start_h for s in seven.stages]
    assert starts == sorted(starts) and starts[1] == pytest.approx(seven.stages[0].end_h)


def test_a_missed_deadline_moves_the_longest_stage_to_the_faster_card():
    path = PROJECTS / "pretrain-sft-preference.toml"
    text = path.read_text()
    relaxed = plan_project(loads(text.replace("deadline_days = 5", "deadline_days = 60")))
    tight = plan_project(loads(text))
    name = "7B continued pretraining"
    before = next(v for v in relaxed.variants if v.name == name)
    after = next(v for v in tight.variants if v.name == name)
    assert before.stages[0].plan.gpu == "A100 80GB" and before.meets_deadline
    assert after.stages[0].plan.gpu == "H100 SXM" and after.meets_deadline
    assert "deadline" in after.stages[0].choice
    assert [p.gpu for p in after.purchases] == ["H100 SXM", "A100 80GB"]
    rented = after.purchases[0]
    assert not rented.owned and rented.busy_h == pytest.approx(after.stages[0].hours)
    assert rented.rent_usd == pytest.approx(after.stages[0].cost)


def test_a_stage_no_pool_card_holds_names_the_stage_and_what_would_fit():
    text = project(stage("tiny", model="qwen2.5-0.5b", method="full")
                   + stage("huge", model="llama-3.1-70b", method="full", after=[]))
    text = text.replace('gpu = "H100 SXM"\ncount = 16', 'gpu = "H100 SXM"\ncount = 2\n'
                        'host_ram_gib = 64')
    plan = plan_project(loads(text))
    tiny, huge = plan.variants[0].stages
    assert tiny.plan is not None and huge.plan is None  # the other stage is still planned
    assert len(plan.errors) == 1
    message = plan.errors[0]
    assert message.startswith('stage "huge" in variant "v", field "model"') and "\n" not in message
    assert "fits on no pool card" in message and huge.would_fit
    assert not plan.variants[0].complete and plan.variants[0].cost is None


def test_pilots_are_small_models_of_the_same_family():
    from core.models import preset

    assert choose_model(preset("qwen2.5-7b"))[0] == "qwen2.5-0.5b"
    assert choose_model(preset("llama-2-13b"))[0] == "tinyllama-1.1b"  # same 32k vocabulary
    same, spec, why = choose_model(preset("qwen2.5-0.5b"))
    assert same == "qwen2.5-0.5b" and "fewer tokens" in why
    plan = plan_project(load(PROJECTS / "cnc-maintenance.toml"))
    pilot = plan.variants[0].stages[0].pilot
    assert pilot.gpu == "RTX 4090" and pilot.hours <= 2.0 and pilot.tokens > 0
    assert [k for k, _ in pilot.checks] == ["loss_falls", "no_findings", "eval_runs",
                                            "throughput"]


def test_stage_status_from_linked_runs():
    assert stage_status([]) == "planned"
    assert stage_status([("pilot", "finished")]) == "piloted"
    assert stage_status([("pilot", "finished"), ("run", "running")]) == "running"
    assert stage_status([("run", "crashed"), ("run", "finished")]) == "done"
