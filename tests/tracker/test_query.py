"""``headroom runs --where`` on the corpus: SQL, Python and a hand-written reading agree."""

from __future__ import annotations

import json
import re

import pytest

from core.query import QueryError
from desktop.launcher import main
from tracker import query
from tracker.ingest import ingest
from tracker.store import Store


@pytest.fixture(scope="module")
def corpus_db(corpus, tmp_path_factory):
    db = tmp_path_factory.mktemp("query") / "corpus.db"
    store = Store(str(db))
    report = ingest(store, [corpus])
    assert sum(r.run_id is not None for r in report.results) >= 30
    store.close()
    return db


def cli(capsys, db, *args: str) -> tuple[int, str, str]:
    try:
        code = main(["runs", "--db", str(db), *args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def listed(corpus_db) -> list[dict]:
    """Every run as ``headroom runs --json`` lists it, with the summary the log states."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["runs", "--db", str(corpus_db), "--json"]) == 0
    runs = json.loads(out.getvalue())
    store = Store(str(corpus_db))
    for run in runs:
        run["stated"] = store.details(run["id"]).final_values
    store.close()
    return runs


def _peak(run: dict) -> float | None:
    for metric in ("mem_peak_gib", "mem_reserved_gib", "mem_used_gib"):
        if metric in run["metrics"] and run["metrics"][metric]["max"] is not None:
            return run["metrics"][metric]["max"]
    return None


def _stat(run: dict, metric: str, stat: str):
    return run["metrics"].get(metric, {}).get(stat)


def _above(value, limit) -> bool:
    return value is not None and value > limit


def _runtime_hours(run: dict) -> float | None:
    seconds = run["stated"].get("train_runtime") or run["stated"].get("elapsed_s")
    return seconds / 3600 * (run["shape"].get("n_gpus") or 1) if seconds else None


# Each query beside its meaning, written out by hand over the --json listing.
QUERIES = {
    'format == "hf_trainer"': lambda r: r["format"] == "hf_trainer",
    "peak_gib > 40": lambda r: _above(_peak(r), 40),
    'name ~ "megatron" and peak_gib > 40':
        lambda r: bool(re.search("megatron", r["name"], re.I)) and _above(_peak(r), 40),
    "not (peak_gib > 40)": lambda r: not _above(_peak(r), 40),
    'method == "lora" or method == "qlora"': lambda r: r["shape"].get("method") in ("lora", "qlora"),
    "seq_len >= 8192 and n_gpus > 1":
        lambda r: (r["shape"].get("seq_len") or 0) >= 8192 and (r["shape"].get("n_gpus") or 0) > 1,
    '"fsdp" in name': lambda r: "fsdp" in r["name"].lower(),
    "loss.last < 1 and loss.count >= 100":
        lambda r: (_stat(r, "loss", "last") is not None and _stat(r, "loss", "last") < 1
                   and (_stat(r, "loss", "count") or 0) >= 100),
    'status in ["finished", "running"] and format != "hf_trainer"':
        lambda r: r["status"] in ("finished", "running") and r["format"] != "hf_trainer",
    'lora_targets ~ "q_proj" and not (precision == "mixed-bf16")':
        lambda r: any("q_proj" in t for t in r["shape"].get("lora_targets") or [])
        and r["shape"].get("precision") != "mixed-bf16",
    "gpu_hours > 10": lambda r: _above(_runtime_hours(r), 10),
    'severity == "warning" or status == "running"':
        lambda r: r["severity"] == "warning" or r["status"] == "running",
    'framework ~ "^megatron" and recompute != "full"':
        lambda r: (r["shape"].get("framework") or "").startswith("megatron")
        and r["shape"].get("recompute") != "full",
}


@pytest.mark.parametrize("text", list(QUERIES))
def test_where_answers_as_the_query_says(capsys, corpus_db, listed, text):
    expected = [r["id"] for r in listed if QUERIES[text](r)]
    assert 0 < len(expected) < len(listed), "a query that keeps all or nothing tests little"
    code, out, err = cli(capsys, corpus_db, "--where", text, "--json")
    assert (code, err) == (0, "")
    assert [r["id"] for r in json.loads(out)] == expected


def test_where_names_the_runs_it_should(capsys, corpus_db):
    code, out, _ = cli(capsys, corpus_db, "--where", 'peak_gib > 40 and name ~ "sft"', "--json")
    names = sorted(r["name"] for r in json.loads(out))
    # Each ms-swift job is one run: its console log, TensorBoard events and GPU sampler joined.
    assert names == [
        "fyh2001__megatron-sft-recipes__p0_baseline_ds_prod_full_epoch/logging",
        "fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload/logging",
    ]


@pytest.mark.parametrize("text", list(QUERIES))
def test_sql_and_python_give_the_same_answer(corpus_db, text):
    store = Store(str(corpus_db))
    compiled = query.compile(text)
    runs = store.runs()
    details = {r.id: store.details(r.id) for r in runs}
    extras = {i: {"summary": d.final_values, "config": d.config} for i, d in details.items()}
    assert query.matching_ids(store, compiled) == [r.id for r in runs
                                             if compiled.matches(r, extras[r.id])]
    store.close()


def test_a_malformed_query_is_one_line_with_its_column(capsys, corpus_db):
    code, out, err = cli(capsys, corpus_db, "--where", 'method == "lora" and peak_gib >')
    assert code == 1 and out == ""
    assert err == ("headroom: error: --where: column 32: the query stops after '>': a value or "
                   "a comparison should follow\n")
    code, _, err = cli(capsys, corpus_db, "--where", "peak_gb > 40")
    assert err.count("\n") == 1 and "column 1: no field 'peak_gb' (did you mean peak_gib" in err


@pytest.mark.parametrize(("text", "column", "words"), [
    ("method > 3", 10, "method is text"),
    ('seq_len == "long"', 12, "seq_len is a number"),
    ('tags == "best"', 1, "'==' does not apply to tags"),
    ('seq_len ~ "1"', 1, "'~' does not apply to seq_len"),
    ("loss > 2", 8, "loss is text (the shape's loss); for the metric, say loss.last"),
    ("eval_loss > 2", 1, "eval_loss is a metric: say eval_loss.last"),
    ("loss.mean > 2", 1, "summaries are last, min, max"),
    ('started_at > "yesterday"', 14, "not a date"),
    ("compile == 1", 12, "True or False"),
    ("peak_gib < None", 12, "None can only be compared with == or !="),
])
def test_fields_check_their_operators_and_values(text, column, words):
    with pytest.raises(QueryError) as caught:
        query.compile(text, ["loss", "eval_loss"])
    assert caught.value.column == column
    assert words in caught.value.message


def test_group_by_prints_each_groups_mean_and_std(capsys, corpus_db, listed):
    code, out, err = cli(capsys, corpus_db, "--group-by", "format", "--where",
                         "peak_gib > 0", "--json")
    assert (code, err) == (0, "")
    groups = {g["key"]: g for g in json.loads(out)}
    with_peak = [r for r in listed if _above(_peak(r), 0)]
    assert sum(g["count"] for g in groups.values()) == len(with_peak)
    megatron = [_peak(r) for r in with_peak if r["format"] == "megatron"]
    stat = groups["megatron"]["summary"]["peak_gib"]
    assert stat["n"] == len(megatron) == 3
    assert stat["mean"] == pytest.approx(sum(megatron) / 3)
    mean = sum(megatron) / 3
    assert stat["std"] == pytest.approx((sum((p - mean) ** 2 for p in megatron) / 2) ** 0.5)


def test_group_by_a_pattern_over_the_name(capsys, corpus_db):
    code, out, _ = cli(capsys, corpus_db, "--group-by",
                       r"name~_(?:ds_prod|fsdp2)_full_epoch(?:/logging)?$",
                       "--where", 'name ~ "megatron-sft-recipes"', "--json")
    keys = {g["key"]: g["count"] for g in json.loads(out)}
    # The two p0 baselines (DeepSpeed and FSDP2) are one group once the backend is taken out.
    assert keys == {"fyh2001__megatron-sft-recipes__p0_baseline": 2,
                    "fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload/logging": 1}
    code, out, _ = cli(capsys, corpus_db, "--group-by", r"name~/(logging|stdout)$", "--where",
                       'name ~ "megatron-sft-recipes"', "--json")
    assert {g["key"]: g["count"] for g in json.loads(out)} == {"logging": 2, "(none)": 1}
    code, _, err = cli(capsys, corpus_db, "--group-by", "name~(")
    assert code == 1 and "--group-by: column 6: bad pattern" in err
