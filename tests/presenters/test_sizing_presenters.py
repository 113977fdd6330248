"""The sizing wizard's Qt-free parts: choices to Setup, wording, hints, bars, report, verdicts."""

from __future__ import annotations

import pytest

from core.calibration import Calibrated, Sample, fit
from core.gpus import catalog
from core.memory import GIB, Setup, estimate, model_states
from core.models import preset
from core.planner import MARGIN, fits, plan
from core.shape import RunShape
from core.sizing import Check, Sizer
from desktop.presenters import memory_bars, sizing_report
from desktop.presenters.formatting import duration
from desktop.presenters.sizing_form import (
    Draft,
    hardware_problem,
    hints,
    static_line,
    stops,
    training_problem,
)

H100, RTX_4090 = catalog()["H100 SXM"], catalog()["RTX 4090"]


def _draft(**choices) -> Draft:
    draft = Draft(spec=preset("llama-3.1-8b"))
    for name, value in choices.items():
        setattr(draft, name, value)
    return draft


@pytest.mark.parametrize(("choices", "message"), [
    ({"method": "qlora", "precision": "fp32"},
     "QLoRA keeps the base quantised (nf4 or int8), which contradicts precision fp32; use LoRA "
     "for a fp32 base"),
    ({"method": "lora", "precision": "nf4"}, "A nf4 base is QLoRA: use QLoRA"),
    ({"method": "inference", "precision": "bf16", "optimizer": "adamw"},
     "Inference has no optimizer (optimizer none)"),
])
def test_contradictions_in_the_forms_words(choices, message):
    assert training_problem(_draft(**choices)) == message


def test_layout_problems_name_the_fields():
    assert hardware_problem(_draft(gpus=["H100 SXM"], tp=3)) == (
        "1 GPU is not a multiple of TP × PP = 3")
    assert hardware_problem(_draft(gpus=["H100 SXM"], tp=3, per_node=3)) == (
        "TP 3 does not divide the 32 attention heads")
    assert hardware_problem(_draft(gpus=["H100 SXM"], pp=2, per_node=4, tp=1)) == ""
    assert "Tick at least one GPU" in hardware_problem(_draft())
    assert hardware_problem(_draft(recommend=True)) == ""


def test_choices_make_the_setup_and_layout():
    draft = _draft(per_node=8, nodes=2, sharding="zero3", tp=2, pp=2, method="lora")
    setup = draft.setup()
    assert setup.method == "lora" and setup.layout.n_gpus == 16 and setup.layout.zero == 3
    assert setup.layout.sequence_parallel and setup.layout.gpus_per_node == 8
    assert _draft(sharding="fsdp").layout().fsdp == "full"
    assert draft.setup(with_layout=False).layout.n_gpus == 1


def test_a_goal_brings_its_precision_and_optimizer():
    draft = _draft()
    draft.set_method("qlora")
    assert (draft.precision, draft.optimizer) == ("nf4", "adamw")
    draft.set_method("inference")
    assert (draft.precision, draft.optimizer) == ("bf16", "none")


def test_seeding_from_a_recorded_run():
    shape = RunShape(model="llama-3.2-3b", method="lora", micro_batch=4, seq_len=4096,
                     n_gpus=16, n_nodes=2, fsdp="full_shard", gpu_model="NVIDIA A100-SXM4-80GB")
    from core.memory.from_shape import inputs_from_shape

    spec, setup, _ = inputs_from_shape(shape)
    draft = Draft()
    draft.seed(spec, setup, shape)
    assert (draft.method, draft.micro_batch, draft.seq_len) == ("lora", 4, 4096)
    assert (draft.per_node, draft.nodes, draft.sharding) == (8, 2, "fsdp")
    assert draft.gpus == ["A100 80GB"]


def test_hints_carry_this_models_figures():
    n = preset("llama-3.1-8b").total_params
    full = hints(_draft())[0]
    assert "16–20 bytes per parameter" in full
    assert f"{16 * n / GIB:,.1f}–{20 * n / GIB:,.1f} GiB" in full
    assert f"{2 * n / GIB:,.1f} GiB" in hints(_draft(method="inference"))[0]
    assert any("FP16 can overflow" in h for h in hints(_draft(precision="mixed-fp16")))
    static = model_states(preset("llama-3.1-8b"), Setup())
    assert f"= {sum(static.values()) / GIB:.1f} GiB" in static_line(_draft())
    assert static_line(_draft(method="qlora", precision="fp32")) == ""  # contradictory: no line


def test_slider_stops_include_the_users_value():
    assert stops((1, 2, 4), 3) == [1, 2, 3, 4] and stops((1, 2, 4), 2) == [1, 2, 4]


def test_a_bar_stacks_the_breakdown_up_to_the_leading_figure():
    spec, setup = preset("llama-3.1-8b"), Setup(method="lora", micro_batch=4)
    [bar] = memory_bars.bars(Sizer(spec), [memory_bars.Candidate("H100", setup, H100)])
    est = estimate(spec, setup)
    assert bar.lead == "analytical" and bar.device_gib == pytest.approx(est.required / GIB)
    assert sum(v for _, v in bar.segments) == pytest.approx(bar.device_gib)
    assert dict(bar.segments)["activations"] == pytest.approx(est.breakdown["activations"] / GIB)
    assert bar.band == pytest.approx((H100.memory_gib * 0.80, H100.memory_gib * 0.85))
    assert bar.verdict == ("fits" if bar.fits else "short") and bar.status.startswith(bar.verdict)
    assert bar.markers == ()  # no history: one figure, nothing beside it


def test_an_untrusted_calibration_is_a_marker_named_in_one_line():
    spec, setup = preset("llama-3.1-8b"), Setup(method="lora", micro_batch=4)
    history = Sizer(spec, fit([Sample(1, spec, setup, "H100 SXM", "device", 60.0,
                                      name="recorded", experiment="one")]))
    [hinted] = memory_bars.bars(history, [memory_bars.Candidate("H100", setup, H100)])
    found = hinted.check.calibrated
    assert found is not None and not found.trusted and hinted.lead == "analytical"
    assert hinted.device_gib == pytest.approx(estimate(spec, setup).required / GIB)
    assert [(m.kind, m.gib) for m in hinted.markers] == [("calibrated", found.gib)]
    line = memory_bars.other_figures(hinted.check)
    assert line == (f"On H100 SXM, calibrated on your runs says {found.gib:.1f} GiB, but it is "
                    f"not trusted "
                    f"({found.why}): the verdicts rest on the analytical model.")
    assert "too few to check on an experiment the fit never saw" in line


def test_a_trusted_calibration_carries_bar_verdict_and_margin():
    spec, setup = preset("llama-3.1-8b"), Setup(method="lora", micro_batch=4)
    est = estimate(spec, setup)
    found = Calibrated("device", 70.0, 66.0, 74.0, "hf x H100 SXM", (1, 2), trusted=True,
                       why="held-out error 4% against 20% uncalibrated, over 3 experiments")
    check = Check(H100, setup, est, found.gib, found, fits(found.gib * GIB, H100), "calibrated")
    bar = memory_bars.bar("H100", check, MARGIN)
    assert sum(v for _, v in bar.segments) == pytest.approx(70.0)  # the analytical split, scaled
    assert bar.verdict == "tight" and bar.status == f"tight: {H100.memory_gib - 70:.1f} GiB free"
    assert [(m.kind, m.gib) for m in bar.markers] == [("analytical", est.required / GIB)]
    assert memory_bars.other_figures(check).startswith(
        "On H100 SXM, calibrated on your runs leads, trusted")


def test_every_verdict_keeps_the_margin_on_the_figure_it_shows():
    spec = preset("llama-3.1-8b")
    sizer = Sizer(spec)
    for micro in (1, 2, 4, 8, 16):
        setup = Setup(method="qlora", precision="nf4", micro_batch=micro, seq_len=4096)
        for gpu in catalog().values():
            [b] = memory_bars.bars(sizer, [memory_bars.Candidate(gpu.name, setup, gpu)])
            assert b.fits == (b.device_gib <= b.band[1])  # the dashed line: the margin kept


def test_recommended_candidates_are_the_best_plan_on_each_gpu():
    spec, setup = preset("llama-3.1-70b"), Setup(method="lora")
    plans = plan(spec, setup, list(catalog().values()), 8)
    found = memory_bars.recommended(plans, list(catalog().values()))
    assert 0 < len(found) <= memory_bars.MAX_RECOMMENDED
    assert len({c.gpu.name for c in found}) == len(found)
    first = plans[0]
    assert found[0].setup == first.setup and found[0].plan is first
    assert found[0].label.split("\n")[:2] == [first.gpu, "plan 1"]


def test_the_what_if_values_move_the_asked_bars_not_the_plans():
    spec, setup = preset("llama-3.1-8b"), Setup(method="qlora", precision="nf4", micro_batch=4,
                                                 seq_len=4096)
    [best] = plan(spec, setup, [RTX_4090], limit=1)
    cands = [*memory_bars.asked(setup, [RTX_4090]), memory_bars.plan_candidate(best, RTX_4090, 1)]
    asked, planned = memory_bars.bars(Sizer(spec), cands, micro_batch=8, seq_len=8192)
    assert asked.check.setup.micro_batch == 8 and asked.check.setup.seq_len == 8192
    assert planned.check.setup == best.setup and planned.plan is best
    assert planned.label == "RTX 4090\nplan 1\n1 GPU"


def test_report_renderings_agree():
    report = [("h1", "Sizing x"), ("p", "a | b"), ("list", ["one"]),
              ("table", ("GPU", "GiB"), [("H100", "12.5")]), ("image", "chart")]
    md = sizing_report.markdown(report, "x-chart.png")
    assert "# Sizing x" in md and "| H100 | 12.5 |" in md and "![chart](x-chart.png)" in md
    text = sizing_report.text(report)
    assert "Sizing x\n========" in text and "H100  12.5" in text and "![" not in text
    page = sizing_report.html_page(report, b"\x89PNG")
    assert "<td>H100</td>" in page and "data:image/png;base64,iVBORw==" in page


@pytest.mark.parametrize(("seconds", "shown"), [(None, "—"), (45, "45 s"), (600, "10 min"),
                                                (5400, "1.5 h"), (3 * 86400, "3.0 days")])
def test_training_time_as_people_say_it(seconds, shown):
    assert duration(seconds) == shown
