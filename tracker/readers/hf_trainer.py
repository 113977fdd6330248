"""Hugging Face Trainer: ``trainer_state.json``, result files, and whole output folders.

A folder is one run: its newest ``trainer_state.json`` (top level or the latest
``checkpoint-N/``) gives the series; ``all_results.json`` and friends the final
figures; ``config.json`` the architecture; ``adapter_config.json`` the LoRA
setup. Every shape field says which file stated it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.hf_config import shape_fields
from core.runlog import PointTable, RunLog
from tracker.readers._common import ReaderError, head_text, load_json, one_run
from tracker.readers._sniffing import Confidence, Sample

STATE = "trainer_state.json"
RESULTS = ("all_results.json", "train_results.json", "eval_results.json")
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_GLOBAL_STEP = re.compile(r'"global_step":\s*(\d+)')
# Keys of the final log_history row that sum up training rather than log a step.
SUMMARY_KEYS = {"train_runtime", "train_loss", "total_flos", "train_samples_per_second",
                "train_steps_per_second"}


def is_summary_row(keys: set[str] | dict) -> bool:
    """The end-of-training row. Newer transformers also put ``train_runtime`` on every
    train row (with ``include_num_input_tokens_seen``), so a row with a loss is a step."""
    found = SUMMARY_KEYS & set(keys)
    return bool(found) and ("loss" not in keys or bool({"train_loss", "total_flos"} & found))


def sniff(sample: Sample) -> float:
    path = sample.path
    if sample.is_dir:
        if (path / STATE).is_file() or _latest_checkpoint_state(path) is not None:
            return Confidence.STRONG
        return Confidence.WEAK if any((path / name).is_file() for name in RESULTS) else Confidence.NONE
    if path.name == STATE:
        return Confidence.STRONG
    text = sample.text[:8192].lstrip()
    if '"log_history"' in text:
        return Confidence.LIKELY
    if path.name in RESULTS:
        return Confidence.HINT
    if text.startswith("[") and '"step"' in text and ('"loss"' in text or '"eval_loss"' in text):
        return Confidence.WEAK  # a user's dump of trainer.state.log_history
    return Confidence.NONE


def read(path: Path) -> RunLog:
    if path.is_dir():
        return _read_folder(path)
    data = load_json(path)
    run = RunLog(format="hf_trainer", name=_run_name(path.parent))
    if isinstance(data, list):
        _add_history(run, data, source=path.name)
    elif isinstance(data, dict) and "log_history" in data:
        _add_state(run, data, source=path.name)
    elif isinstance(data, dict) and path.name in RESULTS:
        run.summary.update(_numbers(data))
    else:
        raise ReaderError("not a trainer_state.json: no log_history")
    return run


def _read_folder(folder: Path) -> RunLog:
    run = RunLog(format="hf_trainer", name=_run_name(folder))
    state = _state_file(folder)
    if state is not None:
        data = load_json(state)
        if not isinstance(data, dict) or "log_history" not in data:
            raise ReaderError(f"{state.relative_to(folder)}: no log_history")
        _add_state(run, data, source=str(state.relative_to(folder)))
        run.sources.append(state)
    for name in RESULTS:
        if (folder / name).is_file():
            results = load_json(folder / name)
            if isinstance(results, dict):
                run.summary.update({k: v for k, v in _numbers(results).items() if k not in run.summary})
                run.sources.append(folder / name)
    _add_model_config(run, folder)
    if not run.sources:
        raise ReaderError("no trainer_state.json or result files in this folder")
    return run


def _state_file(folder: Path) -> Path | None:
    """The trainer state with the most steps: the top-level one or the latest checkpoint's."""
    candidates = [p for p in (folder / STATE, _latest_checkpoint_state(folder)) if p and p.is_file()]
    if not candidates:
        return None
    return max(candidates, key=_global_step)


def _latest_checkpoint_state(folder: Path) -> Path | None:
    best: tuple[int, Path] | None = None
    try:
        entries = list(folder.iterdir())
    except OSError:
        return None
    for entry in entries:
        match = _CHECKPOINT.match(entry.name)
        if match and (entry / STATE).is_file():
            step = int(match.group(1))
            if best is None or step > best[0]:
                best = (step, entry / STATE)
    return None if best is None else best[1]


def _global_step(state: Path) -> tuple[int, bool]:
    """Sort key: steps done, then the top-level file (written last, by save_state())."""
    # HF writes keys sorted, so global_step sits before the long log_history.
    match = _GLOBAL_STEP.search(head_text(state, 8192)) or _GLOBAL_STEP.search(
        state.read_text(errors="replace")
    )
    return (int(match.group(1)) if match else -1, not state.parent.name.startswith("checkpoint-"))


def _add_state(run: RunLog, state: dict[str, Any], source: str) -> None:
    _add_history(run, state.get("log_history") or [], source)
    for key in ("global_step", "max_steps", "num_train_epochs", "total_flos", "best_metric",
                "num_input_tokens_seen"):
        value = state.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            run.summary.setdefault(key, value)
    for key in ("best_model_checkpoint", "best_global_step", "logging_steps", "eval_steps",
                "save_steps", "train_batch_size"):
        if state.get(key) is not None:
            run.config[key] = state[key]
    if isinstance(state.get("train_batch_size"), int):
        run.shape.set("micro_batch", state["train_batch_size"], source)
    run.shape.set("framework", "transformers", source)


def _add_history(run: RunLog, history: list, source: str) -> None:
    points = PointTable()
    step = 0
    for entry in history:
        if not isinstance(entry, dict):
            continue
        step = int(entry.get("step", step))
        numbers = _numbers(entry)
        numbers.pop("step", None)
        if is_summary_row(numbers.keys()):
            run.summary.update(numbers)
            continue
        if any(k.startswith(("eval_", "predict_", "test_")) for k in numbers):
            numbers.pop("epoch", None)  # already logged by the train row at this step
        points.add(step, numbers)
    points.into(run)
    if not run.series and not run.summary:
        raise ReaderError(f"{source}: log_history holds no metrics")


def _numbers(entry: dict[str, Any]) -> dict[str, float]:
    out = {}
    for key, value in entry.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[key] = float(value)
        elif isinstance(value, str):
            try:
                out[key] = float(value)  # transformers 5 logs '2.105'
            except ValueError:
                pass
    return out


def _add_model_config(run: RunLog, folder: Path) -> None:
    config = _model_config(folder)
    if config is not None:
        data = load_json(config)
        if isinstance(data, dict):
            run.shape.update(shape_fields(data), str(config.relative_to(folder)), overwrite=False)
            dtype = data.get("torch_dtype") or data.get("dtype")
            if isinstance(dtype, str):
                run.config.setdefault("model_dtype", dtype)
            run.sources.append(config)
    adapter = _adapter_config(folder)
    if adapter is not None:
        _add_adapter(run, load_json(adapter), str(adapter.relative_to(folder)))
        run.sources.append(adapter)


def _model_config(folder: Path) -> Path | None:
    """``config.json`` of the output folder, or of its latest checkpoint (save_model not called)."""
    if (folder / "config.json").is_file():
        return folder / "config.json"
    state = _latest_checkpoint_state(folder)
    if state is not None and (state.parent / "config.json").is_file():
        return state.parent / "config.json"
    return None


def _adapter_config(folder: Path) -> Path | None:
    direct = folder / "adapter_config.json"
    if direct.is_file():
        return direct
    found = sorted(folder.glob("*/adapter_config.json"))
    return found[0] if found else None


def _add_adapter(run: RunLog, adapter: Any, source: str) -> None:
    """LoRA rank, alpha and targets; 4-bit bases (bnb, unsloth) make it QLoRA."""
    if not isinstance(adapter, dict):
        return
    base = str(adapter.get("base_model_name_or_path") or "")
    quantized = any(tag in base.lower() for tag in ("bnb-4bit", "4bit", "nf4", "gptq", "awq"))
    run.shape.set("method", "qlora" if quantized else "lora", source)
    run.shape.set("lora_rank", adapter.get("r"), source)
    run.shape.set("lora_alpha", adapter.get("lora_alpha"), source)
    targets = adapter.get("target_modules")
    if isinstance(targets, str):
        targets = [targets]
    run.shape.set("lora_targets", sorted(targets) if targets else None, source)
    run.shape.set("model", base or None, source, overwrite=False)
    if quantized:
        run.shape.set("quantization", "nf4", source, overwrite=False)


def _run_name(folder: Path) -> str:
    """Output folders are often called "results" or "outputs": name the run after its parent too."""
    generic = {"results", "outputs", "output", "out", "checkpoints", "runs", "."}
    if folder.name.lower() in generic and folder.parent.name:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


read_runs = one_run(read)  # the reader interface (tracker.readers)
