"""The reader registry: one row per log format.

A reader is a module with ``sniff(path) -> float`` (confidence 0..1) and
``read(path) -> RunLog`` (or ``read_runs(path) -> list[RunLog]`` for files that
hold several runs). Readers with ``dirs=True`` are also asked about folders and
claim a whole run folder as one run. Adding a format is one module, one row
here, and its tests on real files.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import cached_property
from pathlib import Path
from types import ModuleType

from core.runlog import RunLog
from tracker.readers._common import ReaderError

__all__ = ["LOG_PATTERNS", "READERS", "Reader", "ReaderError", "best_reader", "looks_like_log",
           "scores"]

# Below this confidence a reader's claim is ignored.
MIN_CONFIDENCE = 0.3


@dataclass(frozen=True)
class Reader:
    """One log format: its name in the store, a label for people, its module."""

    name: str
    label: str
    module_name: str
    dirs: bool = False

    @cached_property
    def module(self) -> ModuleType:
        return importlib.import_module(f"tracker.readers.{self.module_name}")

    def sniff(self, path: Path) -> float:
        """Confidence that ``path`` is this format; a sniffer that fails says 0."""
        if path.is_dir() and not self.dirs:
            return 0.0
        try:
            return float(self.module.sniff(path))
        except Exception:  # a hostile file must not stop the walk: read() names what is wrong
            return 0.0

    def read(self, path: Path) -> list[RunLog]:
        if hasattr(self.module, "read_runs"):
            logs = self.module.read_runs(path)
        else:
            logs = [self.module.read(path)]
        for log in logs:
            log.format = log.format or self.name
            log.sources = log.sources or [path]
        return logs


READERS: tuple[Reader, ...] = (
    Reader("headroom_jsonl", "Headroom JSONL", "headroom_jsonl", dirs=True),
    Reader("hf_trainer", "HF Trainer (trainer_state.json or output folder)", "hf_trainer", dirs=True),
    Reader("tensorboard", "TensorBoard event files (or a folder of them)", "tensorboard", dirs=True),
    Reader("lightning", "Lightning logs (lightning_logs/version_N or metrics.csv)", "lightning", dirs=True),
    Reader("mlflow", "MLflow run folder (mlruns/)", "mlflow_dir", dirs=True),
    Reader("wandb", "W&B run folder or .wandb log", "wandb_dir", dirs=True),
    Reader("wandb_export", "W&B chart CSV export", "wandb_export"),
    Reader("megatron", "Megatron-LM / Megatron-DeepSpeed console log", "text.megatron"),
    Reader("deepspeed", "DeepSpeed console log", "text.deepspeed"),
    Reader("torchtitan", "torchtitan console log", "text.torchtitan"),
    Reader("nanogpt", "nanoGPT / llm.c / modded-nanogpt console log", "text.nanogpt"),
    Reader("hf_console", "HF Trainer / TRL / axolotl / ms-swift console log", "text.hf_console"),
    Reader("llamafactory", "LLaMA-Factory trainer_log.jsonl", "llamafactory"),
    Reader("ms_swift", "ms-swift logging.jsonl", "ms_swift"),
    Reader("megatron_golden", "Megatron-LM golden values (CI metrics JSON)", "megatron_golden"),
    Reader("gpu_sampler", "GPU sampler log (nvidia-smi CSV, per-GPU JSON lines)", "gpu_sampler"),
    Reader("console", "console log of key: value lines (fallback)", "text.keyvalue"),
    Reader("jsonl", "JSON lines (generic)", "jsonl"),
    Reader("csv", "CSV/TSV table (generic)", "csv_table"),
)

# What a training log's file name looks like: the open dialog's filter, and which unclaimed
# files of a folder walk are reported (the readers themselves decide by content).
LOG_PATTERNS = ("*.json", "*.jsonl", "*.csv", "*.tsv", "*.log", "*.txt", "*.out", "*.err", "*.yaml",
                "*tfevents*", "*.wandb")


def looks_like_log(path: Path) -> bool:
    return any(fnmatch(path.name.lower(), pattern) for pattern in LOG_PATTERNS)


def scores(path: Path) -> list[tuple[float, Reader]]:
    """Every reader's confidence for ``path``, most confident first."""
    ranked = [(reader.sniff(path), reader) for reader in READERS]
    return sorted(ranked, key=lambda pair: -pair[0])


def best_reader(path: Path) -> Reader | None:
    """The most confident reader for ``path``, or None when none claims it."""
    ranked = scores(path)
    if ranked and ranked[0][0] >= MIN_CONFIDENCE:
        return ranked[0][1]
    return None


def labels() -> str:
    """The formats tried, for "unrecognised format" messages."""
    return ", ".join(reader.label for reader in READERS)
