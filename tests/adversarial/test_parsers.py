"""Small files built to crash or exhaust a parser: each is one file's one-line error, in seconds.

They run in a child process: before the fixes, pyarrow and the pickle scanner
died of a segfault and the YAML loader ran for a minute, so in-process they
would take the whole test run down with them.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.adversarial.conftest import cli_code, headroom_log, isolated

DEEP = 20_000


def ingest_json(tmp_path: Path, *paths: Path) -> dict[str, dict]:
    """``headroom ingest --json`` in a child process: each path's entry in the report."""
    done = isolated(cli_code("ingest", *map(str, paths), "--db", str(tmp_path / "h.db"), "--json"))
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}


def stored(tmp_path: Path) -> dict[str, object]:
    """The first run's checkpoints as the child's ingest stored them, by file name."""
    from tracker.store import Store

    store = Store(str(tmp_path / "h.db"))
    try:
        return {Path(c.path).name: c for c in store.checkpoints(1)}
    finally:
        store.close()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("name, header", [
    ("metrics.jsonl", b""),  # generic JSON lines (memory-mapped path)
    ("headroom.jsonl", b'{"headroom": 1, "run": {"name": "deep"}}\n'),  # bytes path
])
def test_a_json_line_nested_twenty_thousand_deep_is_an_error_naming_its_line(tmp_path, name, header):
    bad = tmp_path / "bad" / name
    bad.parent.mkdir()
    bad.write_bytes(header + b'{"step": 1, "loss": 2.0}\n{"step": 2, "x": ' + nested(DEEP)
                    + b'}\n{"step": 3, "loss": 1.0}\n')
    good = headroom_log(tmp_path / "good" / "log.jsonl", [1, 2, 3])

    report = ingest_json(tmp_path, bad, good)

    line = 3 if header else 2
    assert report[name]["status"] == "error"
    assert report[name]["reason"].startswith(f"line {line}: JSON nested deeper than")
    assert report["log.jsonl"]["status"] == "ingested"


def test_deep_json_in_trainer_state_is_one_error(tmp_path):
    out = tmp_path / "out"
    (out / "checkpoint-5").mkdir(parents=True)
    deep = b'{"log_history": [{"step": 1, "loss": 1.0}], "x": ' + nested(DEEP) + b"}"
    (out / "trainer_state.json").write_bytes(deep)
    (out / "checkpoint-5" / "trainer_state.json").write_bytes(deep)

    report = ingest_json(tmp_path, out)

    [entry] = report.values()
    assert entry["status"] == "error" and "nested deeper than" in entry["reason"]


def test_deep_json_in_a_checkpoint_is_that_checkpoints_warning(tmp_path):
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [5, 10])
    (run / "checkpoint-5").mkdir()
    (run / "checkpoint-5" / "trainer_state.json").write_bytes(b'{"x": ' + nested(DEEP) + b"}")

    assert ingest_json(tmp_path, run)["run"]["status"] == "ingested"
    [ckpt] = stored(tmp_path).values()
    assert any("nested deeper than" in w for w in ckpt.warnings)


YAML_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
) + "\n"


def test_a_yaml_alias_bomb_in_hparams_is_refused_at_once(tmp_path):
    assert len(YAML_BOMB) < 500
    version = tmp_path / "lightning_logs" / "version_0"
    version.mkdir(parents=True)
    (version / "hparams.yaml").write_text(YAML_BOMB)
    (version / "metrics.csv").write_text("step,train_loss\n1,2.0\n2,1.5\n")

    [entry] = ingest_json(tmp_path, version).values()

    assert entry["status"] == "ingested"
    assert any("hparams.yaml" in w and "aliases expand" in w for w in entry["warnings"])


def raw_pickle(*ops: bytes) -> bytes:
    return b"\x80\x02" + b"".join(ops) + b"."


def test_a_pickle_whose_dict_key_is_a_deeply_nested_tuple(tmp_path):
    """A key a million tuples deep: hashing it recursed in C until the stack ran out."""
    key = b")" + b"\x85" * 1_000_000  # EMPTY_TUPLE, then TUPLE1 around it again and again
    data = raw_pickle(b"}", key, b"N", b"s")  # EMPTY_DICT key None SETITEM
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1])
    (run / "step_1.pt").write_bytes(data)

    assert ingest_json(tmp_path, run)["run"]["status"] == "ingested"
    assert stored(tmp_path)["step_1.pt"].status == "ok"


def test_a_pickle_built_to_copy_lists_is_given_up_on_quickly(tmp_path):
    """1 MB that asks for a 100,000-item list to be copied 140,000 times."""
    items = b"(" + b"K\x00" * 100_000 + b"e"  # MARK, BININT1 0 ..., APPENDS
    setup = b"cbuiltins\nlist\nq\x01" + b"]" + items + b"q\x02"  # GLOBAL, BINPUT 1, list, BINPUT 2
    copy = b"h\x01h\x02\x85R"  # BINGET 1, BINGET 2, TUPLE1, REDUCE: list(big) once more
    data = raw_pickle(setup, copy * 140_000, b"0" * 140_000, b"}")
    assert len(data) < 1_200_000
    path = tmp_path / "optimizer.pt"
    path.write_bytes(data)

    done = isolated(f"""
        from pathlib import Path
        from tracker.checkpoints.inspect import inspect_file
        info = inspect_file(Path({str(path)!r}))
        print(info.format, info.error)
    """)

    assert done.stdout.startswith("unreadable") and "too much work" in done.stdout


def test_a_pickle_that_claims_a_huge_step_and_huge_numbers(tmp_path):
    """A step past 2**63 in the dict and in the name, and an int too long to print."""
    huge = 10 ** 5000
    body = huge.to_bytes((huge.bit_length() + 8) // 8, "little", signed=True)
    data = raw_pickle(b"}", b"X\x04\x00\x00\x00step", b"\x8a\x09" + (2**64).to_bytes(9, "little"),
                      b"s", b"\x8b" + struct.pack("<i", len(body)) + body, b"N", b"s")
    run = tmp_path / "run"
    headroom_log(run / "headroom.jsonl", [1])
    (run / "model.pt").write_bytes(data)
    plain = run / f"step_{2**64}.pt"
    plain.write_bytes(raw_pickle(b"}"))

    assert ingest_json(tmp_path, run)["run"]["status"] == "ingested"
    found = stored(tmp_path)
    assert found["model.pt"].step is None and found[plain.name].step is None
    assert any("beyond the 64-bit range" in n for n in found[plain.name].notes)
