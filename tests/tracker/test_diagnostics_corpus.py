"""Diagnostics over every run of the corpus that ingests: the known phenomena are found, and clean
runs raise nothing. Run as a script for the false-positive report:

    python -m tests.tracker.test_diagnostics_corpus
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# Runs that show a phenomenon, by path under the corpus (a prefix), with the kinds they raise:
# those and no others. Every other run that ingests is labelled clean: it must raise nothing.
KNOWN: dict[str, set[str]] = {
    # eval loss 0.321 -> 0.420 over 4 evaluations while the training loss goes to 0.0001
    "hf_trainer/P4P4N1CK__whisper-large-v2-japanese-5k-steps": {"overfitting"},
    # six eval sets, each rising from step 401 on while the training loss falls 20-fold
    "hf_trainer/aigoncharov__trainer_state_viz": {"overfitting"},
    # nanoGPT: val loss 2.15 -> 4.92 while the training loss reaches 0.13
    "wandb/jackokeefe11__nanoGPT": {"overfitting"},
    # resumed at step 140749 (epoch 10, schedule length changed); train and val loss rise after
    "lightning/0Xero7__slm_training/lightning_logs/version_5": {"loss_rising"},
    # MoE FSDP2 run: gradient norm up to 19584 against a median of 7, eleven times; and the
    # per-step loss flat at about 1.06 from step 650 to 2353 while the LR was still 35 % of peak
    "tensorboard/fyh2001__megatron-sft-recipes__p0_baseline_fsdp2_full_epoch":
        {"grad_explosion", "loss_plateau_late"},
    # ms-swift run with the nvidia-smi sampler beside it (gpu_metrics.jsonl joins the run as its
    # system metrics): 79.2 of 79.65 GiB in use on every GPU
    "jsonl/ms_swift/fyh2001__megatron-sft-recipes__run_mbs1_ga8_gbs32_offload/logging.jsonl":
        {"memory_tight"},
}


@dataclass
class Report:
    """Per run: its path under the corpus and the kinds it raised; and the verdict."""

    found: dict[str, list[str]] = field(default_factory=dict)  # "path (run id)" -> kinds

    def expected(self, key: str) -> set[str] | None:
        return next((kinds for prefix, kinds in KNOWN.items() if key.startswith(prefix)), None)

    @property
    def clean(self) -> list[str]:
        return [k for k in self.found if self.expected(k) is None]

    @property
    def false_positives(self) -> dict[str, list[str]]:
        return {k: self.found[k] for k in self.clean if self.found[k]}

    @property
    def unexpected(self) -> dict[str, set[str]]:
        """Kinds a labelled run raised beyond its label."""
        return {k: extra for k in self.found if k not in self.clean
                if (extra := set(self.found[k]) - self.expected(k))}

    @property
    def missed(self) -> dict[str, set[str]]:
        return {k: missing for k in self.found if k not in self.clean
                if (missing := self.expected(k) - set(self.found[k]))}

    def lines(self) -> list[str]:
        out = [f"{'FOUND' if kinds else 'clean':5s}  {key}: {', '.join(kinds)}"
               for key, kinds in sorted(self.found.items())]
        n, fp = len(self.clean), len(self.false_positives)
        out.append(f"runs: {len(self.found)}; labelled with a phenomenon: {len(self.found) - n}, "
                   f"missed: {len(self.missed)}, raising more than their label: "
                   f"{len(self.unexpected)}")
        out.append(f"clean runs: {n}; with a finding: {fp}; false-positive rate: "
                   f"{fp / n if n else 0:.1%}")
        return out


def evaluate(corpus: Path, db: Path) -> Report:
    """Ingest the whole corpus into ``db`` (diagnostics run at ingest) and collect the findings."""
    from tracker.ingest import ingest
    from tracker.store import Store

    store = Store(str(db))
    try:
        ingest(store, [corpus])
        report = Report()
        for run in store.runs():
            where = Path(run.source_path)
            key = str(where.relative_to(corpus)) if where.is_relative_to(corpus) else str(where)
            report.found[f"{key} (run {run.id})"] = [f.kind for f in store.findings(run.id)]
        return report
    finally:
        store.close()


@pytest.fixture(scope="module")
def report(corpus, tmp_path_factory) -> Report:
    return evaluate(corpus, tmp_path_factory.mktemp("corpus") / "corpus.db")


def test_every_known_phenomenon_is_found_and_nothing_else(report):
    assert report.missed == {}
    assert report.unexpected == {}


def test_clean_runs_raise_no_finding(report):
    print("\n".join(report.lines()))
    assert report.false_positives == {}


def test_the_labels_still_name_runs_that_ingest(report):
    found = set(report.found)
    stale = [prefix for prefix in KNOWN if not any(k.startswith(prefix) for k in found)]
    assert stale == [], "a labelled run no longer ingests; relabel or fix its reader"


if __name__ == "__main__":
    from tests.conftest import CORPUS

    with tempfile.TemporaryDirectory() as tmp:
        print("\n".join(evaluate(CORPUS, Path(tmp) / "corpus.db").lines()))
    sys.exit(0)
