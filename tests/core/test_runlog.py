from __future__ import annotations

import math

import numpy as np
import pytest

from core.runlog import PointTable, RunLog, Series
from core.shape import RunShape


def test_colliding_aliases_keep_both_series():
    run = RunLog(format="x", name="r")
    run.add_series("train_loss", [1, 2], [3.0, 2.0])
    run.add_series("lm loss", [1, 2], [3.5, 2.5])
    assert run.series["loss"].original == "train_loss"
    assert run.series["lm loss"].values.tolist() == [3.5, 2.5]


def test_the_metric_named_canonically_takes_the_canonical_slot():
    run = RunLog(format="x", name="r")
    run.add_series("train_loss", [1, 2], [3.0, 2.0])
    run.add_series("loss", [1, 2], [3.1, 2.1])
    assert run.series["loss"].values.tolist() == [3.1, 2.1]
    assert run.series["train_loss"].name == "train_loss"


def test_exact_duplicate_metric_is_reported_not_silently_merged():
    run = RunLog(format="x", name="r")
    run.add_series("loss", [1], [3.0])
    assert run.add_series("loss", [1], [4.0]) is None
    assert run.series["loss"].values.tolist() == [3.0]
    assert run.warnings


def test_add_series_applies_unit_scale():
    run = RunLog(format="x", name="r")
    run.add_series("elapsed time per iteration (ms)", [1], [1500.0])
    assert run.series["step_time_s"].values[0] == pytest.approx(1.5)


def test_point_table_keeps_nan_and_sparse_columns():
    table = PointTable()
    table.add(1, {"loss": 2.0})
    table.add(2, {"loss": math.nan, "eval_loss": 1.5})
    run = table.into(RunLog(format="x", name="r"))
    assert run.series["loss"].steps.tolist() == [1, 2]
    assert math.isnan(run.series["loss"].values[1])
    assert run.series["eval_loss"].steps.tolist() == [2]


def test_series_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        Series("loss", np.arange(3), np.zeros(2))


def test_shape_round_trip_keeps_sources():
    shape = RunShape()
    shape.set("seq_len", 2048, "hparams.yaml")
    shape.set("micro_batch", None, "ignored")
    back = RunShape.from_dict(shape.to_dict())
    assert back.seq_len == 2048 and back.sources == {"seq_len": "hparams.yaml"}
    assert back.micro_batch is None


def test_shape_merge_fills_only_missing_fields():
    a, b = RunShape(), RunShape()
    a.set("tp", 2, "megatron args")
    b.set("tp", 4, "other")
    b.set("pp", 2, "other")
    a.merge(b)
    assert (a.tp, a.pp) == (2, 2)
    assert a.sources == {"tp": "megatron args", "pp": "other"}
