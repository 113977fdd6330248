"""The registry's contract: readers declared, imported when a file selects them, never trusted to work.

A planted reader whose sniffer raises (or whose module cannot be imported)
is "not mine" for the file: the right reader still wins, the file it alone
was asked about names the failure in its report line, and the other files go on.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tracker.ingest as ingest_module
import tracker.readers as readers
from tracker.ingest import ingest
from tracker.readers import READERS, Confidence, Reader, Sample, best_reader

ROOT = Path(__file__).resolve().parents[3]
PLANTED = "tracker.readers._planted"


def headroom_log(path: Path, name: str = "run") -> Path:
    lines = [{"headroom": 1, "run": {"name": name}}, *({"step": s, "loss": 3 - s / 10} for s in range(1, 6))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def plant(monkeypatch):
    """Put a reader whose sniffer raises first in the registry, declared as given."""

    def planted(**declared) -> Reader:
        module = types.ModuleType(PLANTED)

        def sniff(sample: Sample) -> float:
            raise RuntimeError("planted bug\nsecond line")

        module.sniff = sniff
        module.read_runs = lambda path: []
        monkeypatch.setitem(sys.modules, PLANTED, module)
        reader = Reader("planted", "a planted broken reader", "_planted", **declared)
        monkeypatch.setattr(readers, "READERS", (reader, *READERS))
        return reader

    return planted


def test_a_sniffer_that_raises_is_not_mine_and_the_right_reader_still_wins(plant, store, tmp_path):
    plant(patterns=("*.jsonl",))
    path = headroom_log(tmp_path / "run.jsonl")
    sample = Sample(path)
    assert best_reader(sample).name == "headroom_jsonl"
    assert sample.failures == ["the planted reader failed on it (RuntimeError: planted bug)"]
    [result] = ingest(store, [path]).results
    assert (result.status, result.format) == ("ingested", "headroom_jsonl")


def test_a_file_only_a_broken_sniffer_was_asked_about_names_the_failure(plant, store, tmp_path):
    plant(patterns=("*.weird",))
    odd = tmp_path / "numbers.weird"
    odd.write_text("1 2 3\n")
    report = ingest(store, [odd, headroom_log(tmp_path / "good.jsonl")])
    first, second = report.results
    assert first.status == "error"
    assert first.reason.startswith("unrecognised format (tried: a planted broken reader, Headroom JSONL")
    assert first.reason.endswith("; the planted reader failed on it (RuntimeError: planted bug)")
    assert second.status == "ingested"


def test_a_folder_sniffer_that_raises_does_not_stop_the_walk(plant, store, tmp_path):
    plant(accepts_directories=True)
    (tmp_path / "a" / "b").mkdir(parents=True)
    headroom_log(tmp_path / "a" / "b" / "run.jsonl")
    report = ingest(store, [tmp_path / "a"])
    failed = "the planted reader failed on it (RuntimeError: planted bug): its files are read one by one"
    assert [(Path(r.path).name, r.status, r.reason) for r in report.results] == [
        ("a", "skipped", failed), ("b", "skipped", failed), ("run.jsonl", "ingested", "")]


def test_a_reader_that_cannot_be_imported_is_not_mine(monkeypatch, tmp_path):
    ghost = Reader("ghost", "a reader whose module is missing", "_no_such_module", ("*.jsonl",))
    monkeypatch.setattr(readers, "READERS", (ghost, *READERS))
    sample = Sample(headroom_log(tmp_path / "run.jsonl"))
    assert best_reader(sample).name == "headroom_jsonl"
    assert "the ghost reader failed on it (ModuleNotFoundError" in sample.failures[0]


def test_a_folder_no_reader_could_be_chosen_for_is_reported_and_its_files_still_read(
        monkeypatch, store, tmp_path):
    real = ingest_module.best_reader

    def failing_for_folders(target):
        if target.is_dir:
            raise RuntimeError("registry bug")
        return real(target)

    monkeypatch.setattr(ingest_module, "best_reader", failing_for_folders)
    (tmp_path / "logs").mkdir()
    headroom_log(tmp_path / "logs" / "run.jsonl")
    report = ingest(store, [tmp_path / "logs"])
    assert [(r.status, r.reason) for r in report.results] == [
        ("error", "could not sniff the folder (RuntimeError: registry bug)"), ("ingested", "")]


def test_only_the_readers_a_name_or_magic_selects_are_asked(tmp_path):
    log = Sample(headroom_log(tmp_path / "train.log"))
    asked = {reader.name for reader in READERS if reader.asks(log)}
    assert {"headroom_jsonl", "megatron", "console", "jsonl"} <= asked
    assert not asked & {"hf_trainer", "tensorboard", "lightning", "mlflow", "wandb", "csv"}
    renamed = tmp_path / "renamed.bin"
    renamed.write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7fK\x22\t\x00\x00\x00\x00\x00\x00"
                        b"\x00\x1a\rbrain.Event:2")
    assert [r.name for r in READERS if r.asks(Sample(renamed))] == ["tensorboard"]  # by its magic
    stdout = tmp_path / "stdout"
    stdout.write_text("step 1 loss: 2.0\n")
    assert {r.name for r in READERS if r.fallback} == {
        r.name for r in READERS if r.asks(Sample(stdout))}  # no pattern names it: the fallbacks
    notes = tmp_path / "notes.md"
    notes.write_text("step 1 loss: 2.0\n")
    assert not [r.name for r in READERS if r.asks(Sample(notes))]


def test_a_certain_claim_ends_the_search_before_later_readers_are_imported(monkeypatch, tmp_path):
    imported = []
    load = Reader.__dict__["module"].func

    def module(reader: Reader):
        imported.append(reader.name)
        return load(reader)

    monkeypatch.setattr(Reader, "module", property(module))
    assert best_reader(headroom_log(tmp_path / "run.jsonl")).name == "headroom_jsonl"
    assert imported == ["headroom_jsonl"]


def test_sniffers_answer_named_tiers_not_literals():
    """No float literal in any sniffer or console signature: the tiers live in one place."""
    for path in sorted((ROOT / "tracker" / "readers").rglob("*.py")):
        if path.name == "_sniffing.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "sniff"]
        scopes += [k.value for n in ast.walk(tree) if isinstance(n, ast.Call)
                   for k in n.keywords if k.arg == "signatures"]
        floats = [(path.name, c.lineno, c.value) for scope in scopes for c in ast.walk(scope)
                  if isinstance(c, ast.Constant) and isinstance(c.value, float)]
        assert not floats, floats
    tiers = [v for k, v in vars(Confidence).items() if k.isupper()]
    assert tiers == sorted(tiers, reverse=True)


def test_a_small_log_is_ingested_without_the_heavy_libraries(tmp_path):
    """The command line's ingest of a small JSON-lines or CSV log into a current database
    imports no data-frame, training or migration library, and only the readers the file selected."""
    code = """
import json, sys
from tracker.cli import main
assert main(["ingest", sys.argv[1], "--db", sys.argv[2]]) == 0
heavy = ("pandas", "pyarrow", "torch", "transformers", "tensorboard", "lightning", "alembic", "scipy")
print(json.dumps({"heavy": [m for m in heavy if m in sys.modules],
                  "readers": sorted(m for m in sys.modules if m.startswith("tracker.readers."))}))
"""
    db = str(tmp_path / "runs.db")
    env = {"HEADROOM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}

    def run(path: Path) -> dict:
        done = subprocess.run([sys.executable, "-c", code, str(path), db], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=True)
        return json.loads(done.stdout.splitlines()[-1])

    run(headroom_log(tmp_path / "first.jsonl", "first"))  # creates the database
    seen = run(headroom_log(tmp_path / "second.jsonl", "second"))
    assert seen["heavy"] == []
    assert "tracker.readers.headroom_jsonl" in seen["readers"]
    assert not [m for m in seen["readers"] if m.startswith("tracker.readers.text.")]
    generic = tmp_path / "metrics.jsonl"
    generic.write_text("".join(json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in range(1, 9)))
    seen = run(generic)
    assert seen["heavy"] == [] and "tracker.readers.jsonl" in seen["readers"]
    assert "tracker.readers.tensorboard" not in seen["readers"]
    table = tmp_path / "losses.csv"
    table.write_text("step,loss,lr\n" + "".join(f"{s},{1 / s},1e-4\n" for s in range(1, 9)))
    seen = run(table)
    assert seen["heavy"] == [] and "tracker.readers.csv_table" in seen["readers"]
