"""The reader registry: one declared contribution per log format.

A reader is a module that follows :class:`ReaderModule`: ``sniff(sample) ->
float`` (a :class:`Confidence` tier) and ``read_runs(path) -> list[RunLog]``.
Its row here declares what can be known without importing it: its name, a
label for people, the file names it reads (``patterns``), a magic string that
names its files whatever they are called, whether it claims whole folders,
and whether it is asked about text files no reader's patterns name
(``fallback``, for console captures such as ``stdout``). A file is shown only
to the readers its name or magic selects, so a folder walk imports the few
readers it needs; a sniffer that raises is "not mine" for that file. Adding a
format is one module, one row here, and its tests on real files.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from fnmatch import fnmatch, translate
from functools import cached_property
from pathlib import Path
from typing import Protocol

from core.runlog import RunLog
from tracker.readers._common import ReaderError, describe
from tracker.readers._sniffing import Confidence, Sample, outranks

__all__ = ["LOG_PATTERNS", "READERS", "Confidence", "Reader", "ReaderError", "ReaderModule",
           "Sample", "best_reader", "looks_like_log", "outranks", "reader_named", "scores"]

log = logging.getLogger(__name__)

# Below this confidence a reader's claim is ignored.
MIN_CONFIDENCE = Confidence.MINIMUM

# What console captures are called (the console dialects, and JSON-lines writers that print there).
CONSOLE = ("*.log", "*.log.*", "*.txt", "*.out", "*.err", "*.stdout", "*.stderr")
JSON_LINES = ("*.jsonl", "*.ndjson", "*.jsonlines")
# Documents, code and configs quote log lines (a README, a notebook) but are no logs: no fallback.
NOT_LOGS = ("*.md", "*.markdown", "*.rst", "*.html", "*.htm", "*.tex", "*.py", "*.ipynb", "*.sh",
            "*.yaml", "*.yml", "*.toml")


class ReaderModule(Protocol):
    """What a reader module provides."""

    def sniff(self, sample: Sample) -> float:
        """Confidence that the sampled file or folder is this format (a :class:`Confidence`)."""

    def read_runs(self, path: Path) -> list[RunLog]:
        """Every run the file or folder holds; :class:`ReaderError` names what is wrong."""


@dataclass(frozen=True)
class Reader:
    """One log format as the registry declares it; its module is imported when first asked."""

    name: str
    label: str
    module_name: str
    patterns: tuple[str, ...] = ()
    accepts_directories: bool = False
    magic: bytes = b""
    fallback: bool = False

    @cached_property
    def names(self) -> re.Pattern[str]:
        """The patterns as one compiled expression (a folder walk tests every file's name)."""
        return _compiled(self.patterns)

    @cached_property
    def module(self) -> ReaderModule:
        return importlib.import_module(f"tracker.readers.{self.module_name}")

    def asks(self, sample: Sample) -> bool:
        """Whether this reader is shown the sample at all (decided without importing it)."""
        if sample.is_dir:
            return self.accepts_directories
        if self.names.match(sample.name) or (self.magic and sample.has_magic(self.magic)):
            return True
        return self.fallback and not _named(sample.name) and not sample.binary

    def sniff(self, target: Path | Sample) -> float:
        """Confidence that ``target`` is this format; a sniffer that fails says 0 ("not mine")."""
        sample = target if isinstance(target, Sample) else Sample(target)
        if not self.asks(sample):
            return Confidence.NONE
        try:
            return float(self.module.sniff(sample))
        except Exception as err:  # a bug or a hostile file must not stop the walk
            log.debug("the %s sniffer failed on %s", self.name, sample.path, exc_info=True)
            sample.failures.append(f"the {self.name} reader failed on it ({describe(err)})")
            return Confidence.NONE

    def read(self, path: Path) -> list[RunLog]:
        logs = self.module.read_runs(path)
        for run in logs:
            run.format = run.format or self.name
            run.sources = run.sources or [path]
        return logs


READERS: tuple[Reader, ...] = (
    Reader("headroom_jsonl", "Headroom JSONL", "headroom_jsonl", (*JSON_LINES, "*.json", *CONSOLE),
           accepts_directories=True, magic=b'{"headroom"'),
    Reader("hf_trainer", "HF Trainer (trainer_state.json or output folder)", "hf_trainer", ("*.json",),
           accepts_directories=True),
    Reader("tensorboard", "TensorBoard event files (or a folder of them)", "tensorboard",
           ("*tfevents*",), accepts_directories=True, magic=b"brain.Event:"),
    Reader("lightning", "Lightning logs (lightning_logs/version_N or metrics.csv)", "lightning",
           ("metrics.csv",), accepts_directories=True),
    Reader("mlflow", "MLflow run folder (mlruns/)", "mlflow_dir", accepts_directories=True),
    Reader("wandb", "W&B run folder or .wandb log", "wandb_dir",
           ("*.wandb", "wandb-history.jsonl", "wandb-summary.json", "wandb-metadata.json"),
           accepts_directories=True),
    Reader("wandb_export", "W&B chart CSV export", "wandb_export", ("*.csv",)),
    Reader("megatron", "Megatron-LM / Megatron-DeepSpeed console log", "text.megatron", CONSOLE,
           fallback=True),
    Reader("deepspeed", "DeepSpeed console log", "text.deepspeed", CONSOLE, fallback=True),
    Reader("torchtitan", "torchtitan console log", "text.torchtitan", CONSOLE, fallback=True),
    Reader("nanogpt", "nanoGPT / llm.c / modded-nanogpt console log", "text.nanogpt", CONSOLE,
           fallback=True),
    Reader("hf_console", "HF Trainer / TRL / axolotl / ms-swift console log", "text.hf_console",
           CONSOLE, fallback=True),
    Reader("llamafactory", "LLaMA-Factory trainer_log.jsonl", "llamafactory",
           (*JSON_LINES, "*.json", *CONSOLE), fallback=True),
    Reader("ms_swift", "ms-swift logging.jsonl", "ms_swift", (*JSON_LINES, "*.json", *CONSOLE),
           fallback=True),
    Reader("megatron_golden", "Megatron-LM golden values (CI metrics JSON)", "megatron_golden",
           ("*.json",)),
    Reader("gpu_sampler", "GPU sampler log (nvidia-smi CSV, per-GPU JSON lines)", "gpu_sampler",
           ("*.csv", *JSON_LINES, "*.json", *CONSOLE), fallback=True),
    Reader("console", "console log of key: value lines (fallback)", "text.keyvalue", CONSOLE,
           fallback=True),
    Reader("jsonl", "JSON lines (generic)", "jsonl", (*JSON_LINES, "*.json", *CONSOLE), fallback=True),
    Reader("csv", "CSV/TSV table (generic)", "csv_table", ("*.csv", "*.tsv")),
)


def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(translate(p) for p in patterns) or r"(?!)")  # none: matches nothing


def _log_patterns() -> tuple[str, ...]:
    """Every reader's patterns, those another pattern covers left out (``metrics.csv`` by ``*.csv``)."""
    every = dict.fromkeys(p for reader in READERS for p in reader.patterns)
    return tuple(p for p in every if not any(o != p and fnmatch(p, o) for o in every))


# What a training log's file name looks like: the open dialog's filter, and which unclaimed
# files of a folder walk are reported rather than ignored.
LOG_PATTERNS = _log_patterns()
_LOGS = _compiled(LOG_PATTERNS)
# A name some reader declares, or one that says the file is no log: no fallback reader is asked.
_NAMED = _compiled((*LOG_PATTERNS, *NOT_LOGS))


def _named(name: str) -> bool:
    return _NAMED.match(name) is not None


def looks_like_log(path: Path) -> bool:
    return _LOGS.match(path.name.lower()) is not None


def reader_named(name: str) -> Reader:
    """The registry row called ``name``."""
    return next(reader for reader in READERS if reader.name == name)


def scores(target: Path | Sample) -> list[tuple[float, Reader]]:
    """Every reader's confidence for ``target``, most confident first (ties: registry order)."""
    sample = target if isinstance(target, Sample) else Sample(target)
    ranked = [(reader.sniff(sample), reader) for reader in READERS]
    return sorted(ranked, key=lambda pair: -pair[0])


def best_reader(target: Path | Sample) -> Reader | None:
    """The most confident reader for ``target``, or None when none claims it.

    Only the readers the sample selects are imported and asked, in registry
    order; a certain claim ends the search (no later row could win the tie).
    """
    sample = target if isinstance(target, Sample) else Sample(target)
    best, chosen = MIN_CONFIDENCE, None
    for reader in READERS:
        confidence = reader.sniff(sample)
        if confidence > best or (chosen is None and confidence == best):
            best, chosen = confidence, reader
        if best >= Confidence.CERTAIN:
            break
    return chosen


def labels() -> str:
    """The formats tried, for "unrecognised format" messages."""
    return ", ".join(reader.label for reader in READERS)
