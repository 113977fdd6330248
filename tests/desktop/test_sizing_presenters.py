"""The sizing wizard's Qt-free parts: choices to Setup, wording, hints, bars, report, verdicts."""

from __future__ import annotations

import pytest

from core.calibration import Sample, fit
from core.gpus import catalog
from core.memory import GIB, Setup, estimate, model_states
from core.models import preset
from core.planner import plan
from core.shape import RunShape
from core.sizing import Sizer
from desktop.presenters import memory_bars, sizing_report
from desktop.presenters.sizing_form import (
    Draft,
    hardware_problem,
    hints,
    static_line,
    stops,
    training_problem,
)

H100 = catalog()["H100 SXM"]


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


def test_a_bar_stacks_the_breakdown_up_to_the_device_reading():
    spec, setup = preset("llama-3.1-8b"), Setup(method="lora", micro_batch=4)
    [bar] = memory_bars.bars(Sizer(spec), [memory_bars.Candidate("H100", setup, H100)])
    est = estimate(spec, setup)
    assert sum(v for _, v in bar.segments) == pytest.approx(est.device / GIB)
    assert dict(bar.segments)["activations"] == pytest.approx(est.breakdown["activations"] / GIB)
    assert bar.band == pytest.approx((H100.memory_gib / 1.2, H100.memory_gib / 1.15))
    assert bar.verdict == ("fits" if bar.fits else "short") and bar.status.startswith(bar.verdict)
    # One recorded run is one experiment: its calibrated figure is shown, the verdict stays
    # on the analytical one.
    history = Sizer(spec, fit([Sample(1, preset("llama-3.1-8b"), setup, "H100 SXM", "device",
                                      60.0, name="recorded")]))
    [hinted] = memory_bars.bars(history, [memory_bars.Candidate("H100", setup, H100)])
    assert hinted.calibrated is not None and not hinted.calibrated.trusted
    assert hinted.device_gib == pytest.approx(bar.device_gib)


def test_recommended_candidates_are_the_best_plan_on_each_gpu():
    spec, setup = preset("llama-3.1-70b"), Setup(method="lora")
    plans = plan(spec, setup, list(catalog().values()), 8)
    found = memory_bars.candidates(setup, list(catalog().values()), plans, recommend=True)
    assert 0 < len(found) <= memory_bars.MAX_RECOMMENDED
    assert len({c.gpu.name for c in found}) == len(found)
    first = plans[0]
    assert found[0].setup == first.setup and found[0].label == f"{first.gpu}\n{first.layout}"


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
    assert sizing_report.duration(seconds) == shown
