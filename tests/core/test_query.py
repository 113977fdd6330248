"""The filter language's parser: the tree it builds, and mistakes reported at their column."""

from __future__ import annotations

import pytest

from core.query import All, Compare, Either, Not, QueryError, Ref, parse


def test_the_issue_example_reads_as_three_comparisons():
    tree = parse('method == "lora" and peak_gib > 40 and model ~ "llama"')
    assert tree == All((
        Compare(Ref(("method",), 1), "==", "lora", 11),
        Compare(Ref(("peak_gib",), 22), ">", 40, 33),
        Compare(Ref(("model",), 40), "~", "llama", 48),
    ))


def test_operators_and_fields():
    assert parse("1 < seq_len <= 4096") == All((
        Compare(Ref(("seq_len",), 5), ">", 1, 1), Compare(Ref(("seq_len",), 5), "<=", 4096, 16)))
    assert parse('"best" in tags').op == "has"
    assert parse('"best" not in tags').op == "not has"
    assert parse('method in ["lora", "qlora"]').value == ("lora", "qlora")
    assert parse('metrics["eval/acc"].max > .5').ref.path == ("metrics", "eval/acc", "max")
    assert parse("config.training_args.seed == -1").value == -1
    assert parse("compile") == Compare(Ref(("compile",), 1), "==", True, 1)
    assert isinstance(parse('not (name ~ "seed") or x == None'), Either)
    assert isinstance(parse('not name ~ "seed"'), Not)


def test_a_tilde_inside_a_string_or_as_python_inversion_is_not_rewritten():
    assert parse('name == "a~b"').value == "a~b"
    with pytest.raises(QueryError, match="expected a value"):
        parse("x == ~3")


@pytest.mark.parametrize(("text", "column", "words"), [
    ("peak_gib >", 11, "stops after '>'"),
    ('method = "lora"', 8, "use =="),
    ("seq_len > 1 and", 16, "stops after 'and'"),
    ("a == b", 6, "not with another field"),
    ('x in "ab"', 6, "brackets"),
    ("x ~ 3", 5, "pattern in quotes"),
    ('x ~ "("', 5, "bad pattern"),
    ('name !~ "x"', 6, "not (field ~"),
    ("x is None", 6, "'is' is not supported"),
    ("len(name) > 3", 1, "no calls or arithmetic"),
    ("3 > 2", 1, "must be a field"),
    ("x > 1 + 2", 5, "expected a value"),
    ('a @ "x"', 3, "'@' is not an operator"),
    ("(x == 1", 1, "never closed"),
    ("x == 1 y == 2", 8, "does not read as a query"),
    ("   ", 1, "empty"),
])
def test_mistakes_are_reported_at_their_column(text, column, words):
    with pytest.raises(QueryError) as caught:
        parse(text)
    assert caught.value.column == column
    assert words in caught.value.message
    assert str(caught.value).startswith(f"column {column}: ")
    assert "\n" not in str(caught.value)


def test_nothing_is_evaluated():
    with pytest.raises(QueryError):
        parse("__import__('os').system('true')")
    with pytest.raises(QueryError):
        parse("x == (lambda: 1)()")
