"""The planner answers a buyer: plans that keep the experiment first, plausible figures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.gpus import catalog, find
from core.memory import Setup
from core.models import preset
from core.planner import LEVELS, MARGIN, plan
from core.throughput import throughput

RTX_4090, A100, H100 = find("rtx-4090"), find("a100 80gb"), find("h100 sxm")


def test_an_8b_qlora_fits_one_4090_with_accumulation_keeping_the_batch():
    asked = Setup(method="qlora", precision="nf4", micro_batch=4, seq_len=4096)
    plans = plan(preset("llama-3.1-8b"), asked, [RTX_4090, A100, H100])
    first = next(p for p in plans if p.gpu == RTX_4090.name)
    assert first.n_gpus == 1 and first.level == 0
    assert first.setup.micro_batch <= 2
    assert first.setup.micro_batch * first.setup.grad_accum == 4  # the global batch is kept
    assert first.device_gib <= (1 - MARGIN) * RTX_4090.memory_gib
    assert any("gradient accumulation" in change for change in first.changes)


def test_a_70b_full_fine_tune_runs_as_asked_on_enough_h100s_before_any_optimizer_change():
    asked = Setup(method="full", micro_batch=1, seq_len=4096)
    plans = plan(preset("llama-3.1-70b"), asked, [H100])
    as_asked = [p for p in plans if not p.changes]
    assert as_asked and as_asked[0].n_gpus >= 16
    assert as_asked[0].nodes == as_asked[0].n_gpus // H100.gpus_per_node > 1
    assert "nodes" in as_asked[0].layout
    first_change = min(i for i, p in enumerate(plans) if p.level > 0)
    assert plans.index(as_asked[0]) < first_change
    for p in plans:
        if p.setup.layout.offload_optimizer or p.setup.layout.offload_params:
            assert p.host_ram_gib > 0 and p.offload_s_per_step > 0


def test_a_fixed_global_batch_is_kept_by_every_plan_that_keeps_the_experiment():
    asked = Setup(method="lora", micro_batch=4, seq_len=2048)
    plans = plan(preset("llama-3.1-8b"), asked, [A100], max_gpus=8, global_batch=32)
    assert plans
    for p in (p for p in plans if p.level == 0):
        assert p.global_batch == 32


MODELS = ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-14b", "mistral-7b-v0.1", "llama-3.1-70b")
GPUS = ("RTX 4090", "A100 80GB", "H100 SXM", "L40S", "MI300X")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.sampled_from(MODELS), st.sampled_from(("full", "lora", "qlora")),
       st.sampled_from((1, 2, 4)), st.sampled_from((1024, 4096)),
       st.lists(st.sampled_from(GPUS), min_size=1, max_size=3, unique=True))
def test_plans_are_plausible(model, method, micro, seq, gpus):
    precision = "nf4" if method == "qlora" else "mixed-bf16"
    asked = Setup(method=method, precision=precision, micro_batch=micro, seq_len=seq)
    plans = plan(preset(model), asked, [find(g) for g in gpus], max_gpus=64)
    for p in plans:
        assert p.fits and p.device_gib <= (1 - MARGIN) * p.capacity_gib  # the margin is kept
        lay = p.setup.layout
        if lay.offload_optimizer or lay.offload_params:
            assert p.host_ram_gib > 0  # offload says what host RAM it needs
        assert 0 < p.speed <= 1.0
    levels = [p.level for p in plans]
    assert levels == sorted(levels)  # a change of optimizer or method never ranks above
    for p in plans:
        if p.setup.method != method:
            assert LEVELS[p.level] == "changes the experiment"


@pytest.mark.parametrize("gpu", ["H100 SXM", "RTX 4090", "A100 80GB"])
def test_throughput_never_grows_faster_than_the_gpu_count(gpu):
    card = catalog()[gpu]
    spec, setup = preset("llama-3.1-8b"), Setup(method="qlora", precision="nf4", seq_len=2048)
    one = throughput(spec, setup, card)
    for n in (2, 4, 8, 16):  # the same per-GPU setup, more data-parallel replicas
        assert throughput(spec, setup.but(n_gpus=n), card) <= n * one * (1 + 1e-9)
