"""Every reader asked about every sample the tests have: each is claimed by the one reader meant for it.

The samples: the project's own (tests/data, resources/samples), logs the producers
write by really training tiny models, and the corpus when it is present. Each
table maps a path (relative to its root, ``fnmatch`` style, the first row that
matches wins) to the reader that must claim it, or None where no reader may; a
path no row names is claimed by none. "Claimed alone" means the expected reader's
confidence is above every other reader's, with no tie, and no sniffer fails.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

from tracker.readers import MIN_CONFIDENCE, READERS, Sample, best_reader, scores

ROOT = Path(__file__).resolve().parents[3]

SHIPPED = (
    ("tests/data/megatron_golden/*/golden_values_*.json", "megatron_golden"),
    ("tests/data/ms_swift/*/logging.jsonl", "ms_swift"),
    ("resources/samples/hf-*/config.json", None),
    ("resources/samples/hf-*", "hf_trainer"),
    ("resources/samples/lightning-*/hparams.yaml", None),
    ("resources/samples/lightning-*", "lightning"),
    ("resources/samples/*.jsonl", "headroom_jsonl"),
)

# What the producers write: an HF Trainer output folder, a Lightning CSV logger's
# version folder, a SummaryWriter's log folder.
HF = (
    ("", "hf_trainer"),
    ("*trainer_state.json", "hf_trainer"),
    ("*_results.json", "hf_trainer"),
    ("checkpoint-*/*", None),
    ("checkpoint-*", "hf_trainer"),
)
LIGHTNING = (("", "lightning"), ("metrics.csv", "lightning"))
TENSORBOARD = (("", "tensorboard"), ("events.out.tfevents.*", "tensorboard"))

CORPUS = (
    ("hf_trainer/*_listing.txt", None),
    ("hf_trainer/*adapter_config.json", None),
    ("hf_trainer/*/gemma_qlora_final", None),
    ("hf_trainer/*/val_loss_step_*.json", None),
    ("hf_trainer/*", "hf_trainer"),
    ("jsonl/megatron_golden_values/*/golden_values_*.json", "megatron_golden"),
    ("jsonl/*/logging.jsonl", "ms_swift"),
    ("jsonl/*/gpu_metrics.jsonl", "gpu_sampler"),
    ("jsonl/*/trainer_log.jsonl", "llamafactory"),
    ("lightning/*/version_*/metrics.csv", "lightning"),
    ("lightning/*/version_*/*", None),
    ("lightning/*/version_*", "lightning"),
    ("mlflow/*/mlruns/0/meta.yaml", None),
    ("mlflow/*/mlruns/0/*/*", None),
    ("mlflow/*/mlruns/0/*", "mlflow"),
    ("tensorboard/elena-lyulina__Megatron-LM-Attention-Benchmark", None),  # a folder of runs
    ("tensorboard/*", "tensorboard"),
    ("text_logs/custom/*.txt", "console"),
    ("text_logs/hf_trainer_console/*.txt", "hf_console"),
    ("text_logs/megatron_*/*/*.out", "megatron"),
    ("text_logs/megatron_*/*/*.log", "megatron"),
    ("text_logs/modded_nanogpt/*/*", "nanogpt"),
    ("text_logs/ms_swift/*/stdout.log", "hf_console"),
    ("wandb/*/files/config.yaml", None),
    ("wandb/*/logs*", None),
    ("wandb/*/files/output.log", "nanogpt"),
    ("wandb/*/*", "wandb"),
)


def expected(relative: str, table: tuple) -> str | None:
    return next((name for pattern, name in table if fnmatch(relative, pattern)), None)


def every_path(root: Path) -> list[Path]:
    return sorted([root, *root.rglob("*")])


def check_matrix(root: Path, table: tuple, paths: list[Path] | None = None) -> set[str]:
    """Assert each path is claimed as the table says; return the readers that claimed something."""
    claimed = set()
    for path in paths if paths is not None else every_path(root):
        relative = path.relative_to(root).as_posix() if path != root else ""
        want = expected(relative, table)
        sample = Sample(path)
        ranked = scores(sample)
        assert not sample.failures, (relative, sample.failures)
        assert len(ranked) == len(READERS)
        assert all(0.0 <= confidence <= 1.0 for confidence, _ in ranked)
        (top, winner), (second, _) = ranked[:2]
        if want is None:
            assert top < MIN_CONFIDENCE, (relative, winner.name, top)
        else:
            assert (winner.name, top > second) == (want, True), (relative, ranked[:2])
            assert best_reader(path).name == want, relative  # the short path agrees with the full one
            claimed.add(want)
    return claimed


def test_the_project_samples_are_each_claimed_by_their_reader():
    paths = [p for base in ("tests/data", "resources/samples") for p in every_path(ROOT / base)]
    claimed = check_matrix(ROOT, SHIPPED, paths)
    assert claimed == {name for _, name in SHIPPED if name}


def test_the_producers_logs_are_each_claimed_by_their_reader(hf_source, lightning_source, tmp_path):
    from tests.producers import write_summary_writer

    write_summary_writer(tmp_path / "tb", steps=5)
    assert check_matrix(hf_source, HF) == {"hf_trainer"}
    assert check_matrix(lightning_source, LIGHTNING) == {"lightning"}
    assert check_matrix(tmp_path / "tb", TENSORBOARD) == {"tensorboard"}


def test_the_corpus_files_are_each_claimed_by_their_reader(corpus):
    claimed = check_matrix(corpus, CORPUS)
    assert claimed == {name for _, name in CORPUS if name}


@pytest.mark.parametrize(("name", "expect"), [
    ("train.log", True), ("slurm-1234.out", True), ("events.out.tfevents.17.host", True),
    ("metrics.CSV", True), ("run-abc.wandb", True), ("model.safetensors", False), ("README.md", False),
])
def test_log_patterns_are_the_readers_own(name, expect):
    from tracker.readers import LOG_PATTERNS, looks_like_log

    assert looks_like_log(Path(name)) is expect
    declared = {pattern for reader in READERS for pattern in reader.patterns}
    assert set(LOG_PATTERNS) <= declared
    assert all(any(fnmatch(p, q) for q in LOG_PATTERNS) for p in declared)
