"""Small CSV tables parsed without pyarrow give exactly pyarrow's columns, or are left to it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracker.readers import _tabular
from tracker.readers._small_csv import small_csv

ROOT = Path(__file__).resolve().parents[3]

PLAIN = {
    "lightning.csv": "epoch,step,train_loss,val_loss\n0,9,2.5,\n0,19,2.25,\n0,19,,2.4\n1,29,2.125,\n",
    "exponents.csv": "step,lr,loss\n1,1e-05,nan\n2,2E-5,inf\n3,-3e+00,-inf\n",
    "semicolons.csv": "step;loss\n1;2.0\n\n2;1.5\n",
    "quoted.csv": '"Step","run-a - loss","run-a - loss__MIN"\n1,"2.5",2.4\n2,2.25,NA\n',
    "empty column.tsv": "step\tloss\tnothing\n1\t2.0\t\n2\t1.5\tnull\n",
}
NOT_PLAIN = {
    "text.csv": "step,loss,note\n1,2.0,warm-up\n",
    "ragged.csv": "step,loss\n1,2.0,3\n",
    "capital nan.csv": "step,loss\n1,NaN\n",
    "plus sign.csv": "step,loss\n+1,2.0\n",
    "newline in quotes.csv": 'step,loss\n1,"2.0\n"\n',
    "past int64.csv": "step,loss\n99999999999999999999,2.0\n",
    "header only.csv": "step,loss\n",
    "dates.csv": "time,loss\n2024-01-01,2.0\n",
}


def arrow_columns(path: Path) -> tuple[dict, int]:
    import pyarrow as pa

    start = _tabular._text_head(path, "CSV")
    delimiter = _tabular._delimiter(path, start)
    with pa.memory_map(str(path)) as source:
        table = _tabular._csv_table(source, _tabular._csv_header(path, start, delimiter), delimiter)
    return _tabular._csv_numeric(table), table.num_rows


def assert_same(path: Path) -> None:
    delimiter = _tabular._delimiter(path, _tabular._text_head(path, "CSV"))
    mine, rows = small_csv(path, delimiter)
    theirs, their_rows = arrow_columns(path)
    assert rows == their_rows and list(mine) == list(theirs), path
    for name, column in mine.items():
        other = theirs[name]
        assert column.values.dtype == other.values.dtype, (path, name)
        np.testing.assert_array_equal(column.present, other.present)
        np.testing.assert_array_equal(column.values, other.values)


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_a_plain_small_table_gives_pyarrows_columns(tmp_path, name):
    path = tmp_path / name
    path.write_text(PLAIN[name], encoding="utf-8")
    assert_same(path)


@pytest.mark.parametrize("name", sorted(NOT_PLAIN))
def test_a_table_pyarrow_might_read_otherwise_is_left_to_it(tmp_path, name):
    path = tmp_path / name
    path.write_text(NOT_PLAIN[name], encoding="utf-8")
    assert small_csv(path, ",") is None


def test_real_small_tables_give_pyarrows_columns(corpus):
    tables = [p for p in [*corpus.rglob("*.csv"), *(ROOT / "resources").rglob("*.csv")]
              if p.stat().st_size < 256 * 1024]
    taken = [p for p in tables if small_csv(p, ",") is not None]
    assert len(taken) >= 5
    for path in taken:
        assert_same(path)
