"""A training project: stages, variants of them, a hardware pool, and a deadline or budget.

The seed article's advice (§4) is that the hardware question is a strategy
question: split the job (several 1-7B specialists rather than one 30B
generalist), size each training stage on its own, pilot on a small model
first (§5.3), and start on mid-range cards, moving up only when a stage
needs it. A :class:`Project` holds that plan; :mod:`core.project_plan` sizes
it. It is written as TOML (``headroom plan project.toml``; the app stores the
same text), and every mistake in it is one line that names the stage and the
field, so the user knows where to look.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.gpus import GPU, find
from core.memory.frameworks import FRAMEWORKS
from core.memory.precision import OPTIMIZERS, PRECISIONS, QUANTIZED
from core.models import ModelError, preset, quantity
from core.shape import ATTENTION, RECOMPUTE

TRAINING_METHODS = ("full", "lora", "qlora")
MODEL_KEYS = ("model", "config", "run", "params")
DEFAULT_GLOBAL_BATCH = 64
DEFAULT_SEQ_LEN = 2048
LINKS = ("pcie", "nvlink", "xgmi", "infiniband", "ethernet")


class ProjectError(ValueError):
    """A project that cannot be read or planned as written; the message is one line."""


class _Bad(ValueError):
    """A value's problem, before the loader says where it is."""


@dataclass(frozen=True)
class ModelRef:
    """How a stage names its model: a preset, a config.json, a recorded run, or a count."""

    kind: str  # one of MODEL_KEYS
    value: str | int | float

    @property
    def label(self) -> str:
        if self.kind == "run":
            return f"run {self.value}"
        if self.kind == "params":
            return f"{float(self.value) / 1e9:.3g}B parameters"
        return str(self.value)


@dataclass(frozen=True)
class Stage:
    """One training stage: a model trained one way on a volume of data."""

    name: str
    model: ModelRef
    tokens: float  # per epoch
    method: str = "full"
    epochs: float = 1.0
    seq_len: int = DEFAULT_SEQ_LEN
    global_batch: int = DEFAULT_GLOBAL_BATCH  # samples per optimizer step
    micro_batch: int | None = None
    precision: str | None = None
    optimizer: str | None = None
    framework: str = "hf"
    lora_rank: int | None = None
    recompute: str | None = None
    attention: str | None = None
    after: tuple[str, ...] | None = None  # None: the stage before it in the variant
    gpu: str | None = None  # pinned to this pool card
    pilot_model: str | None = None
    note: str = ""

    @property
    def total_tokens(self) -> float:
        return self.tokens * self.epochs


@dataclass(frozen=True)
class Card:
    """A class of cards in the pool: how many, owned or rented, at what price."""

    gpu: GPU  # the catalog entry with the project's price, or the project's own card
    count: int
    owned: bool = False
    price_usd: float | None = None  # purchase price per card, for owned-vs-rented
    host_ram_gib: float | None = None  # CPU memory per node: the most offload may use

    @property
    def name(self) -> str:
        return self.gpu.name

    def holds_offload(self, host_ram_gib: float) -> bool:
        """Whether a node of this pool has the CPU memory a plan's offload asks for."""
        return self.host_ram_gib is None or host_ram_gib <= self.host_ram_gib


@dataclass(frozen=True)
class Variant:
    """One way to do the project: its stages, in the order they run."""

    name: str
    stages: tuple[Stage, ...]
    description: str = ""


@dataclass(frozen=True)
class Project:
    name: str
    pool: tuple[Card, ...]
    variants: tuple[Variant, ...]
    description: str = ""
    deadline_days: float | None = None
    budget_usd: float | None = None
    margin: float = 0.15
    base_dir: Path | None = None  # where relative config paths are found

    def card(self, name: str) -> Card | None:
        return pool_card(self.pool, name)

    def stage(self, ref: str) -> tuple[Variant, Stage]:
        """A stage by "variant/stage", or by its name alone when only one variant has it."""
        variant_name, _, stage_name = ref.rpartition("/")
        found = [(v, s) for v in self.variants for s in v.stages
                 if s.name == stage_name and variant_name in ("", v.name)]
        if len(found) == 1:
            return found[0]
        if found:
            raise ProjectError(f"stage {stage_name!r} is in several variants: write "
                               f"VARIANT/{stage_name}, e.g. {found[0][0].name}/{stage_name}")
        raise ProjectError(f"no stage {ref!r} in project {self.name!r}")


def pool_card(pool: tuple[Card, ...], name: str) -> Card | None:
    """The pool's card for a name as people write it ("4090", "h100 sxm")."""
    found = find(name)
    key = found.name if found else name
    return next((c for c in pool if c.name in (key, name)), None)


def where(variant: str, stage: str, name: str) -> str:
    """The place of a field in a project, as every error names it."""
    return f'stage "{stage}" in variant "{variant}", field "{name}"'


# ---- Reading TOML


def load(path: Path) -> Project:
    """A project from a TOML file (relative config paths are beside it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ProjectError(f"{path}: cannot read: {err}") from None
    try:
        return loads(text, path.resolve().parent)
    except ProjectError as err:
        raise ProjectError(f"{path.name}: {err}") from None


def loads(text: str, base_dir: Path | None = None) -> Project:
    """A project from TOML text; raises ProjectError naming the table and field at fault."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ProjectError(f"not valid TOML: {err}") from None
    _values(data, dict.fromkeys(("project", "pool", "variant"), _any),
            lambda k: f'top level, table "{k}"')
    head = _table(data.get("project"), "the [project] table")
    values = _values(head, PROJECT_FIELDS, lambda k: f'[project], field "{k}"')
    if not values.get("name"):
        raise ProjectError('[project], field "name": give the project a name')
    pool = _pool(data.get("pool"))
    variants = _variants(data.get("variant"), base_dir, pool)
    return Project(pool=pool, variants=variants, base_dir=base_dir, **values)


def _pool(entries: Any) -> tuple[Card, ...]:
    if not isinstance(entries, list) or not entries:
        raise ProjectError("no [[pool]] entries: list the GPUs you have or can rent")
    cards: list[Card] = []
    for i, entry in enumerate(entries, 1):
        place = f"pool entry {i}"
        entry = _table(entry, place)
        if isinstance(entry.get("gpu"), str):
            place += f" ({entry['gpu']})"
        values = _values(entry, POOL_FIELDS, lambda k, p=place: f'{p}, field "{k}"')
        for needed in ("gpu", "count"):
            if needed not in values:
                raise ProjectError(f'{place}, field "{needed}": missing')
        card = _card(values, place)
        if any(c.name == card.name for c in cards):
            raise ProjectError(f'{place}, field "gpu": {card.name} is listed twice')
        cards.append(card)
    return tuple(cards)


_CUSTOM_GPU = ("memory_gib", "bf16_tflops", "fp8_tflops", "bandwidth_tbs", "link",
               "gpus_per_node", "host_link_gbs")


def _card(values: dict[str, Any], place: str) -> Card:
    own = {k: values[k] for k in _CUSTOM_GPU if k in values}
    gpu = find(values["gpu"])
    if gpu is None:
        if "memory_gib" not in own or "bf16_tflops" not in own:
            raise ProjectError(f'{place}, field "gpu": {values["gpu"]!r} is not in the catalog '
                               "(headroom size --list-gpus); for a card of your own give "
                               "memory_gib and bf16_tflops")
        gpu = GPU(name=values["gpu"], vendor="custom", memory_gib=own["memory_gib"],
                  bandwidth_tbs=own.get("bandwidth_tbs", 1.0), bf16_tflops=own["bf16_tflops"],
                  fp8_tflops=own.get("fp8_tflops", 0.0), link=own.get("link", "pcie"),
                  link_gbs=32.0, gpus_per_node=own.get("gpus_per_node", 8),
                  source="the project's pool", host_link_gbs=own.get("host_link_gbs", 25.0))
    else:
        gpu = replace(gpu, **own)
    if "usd_per_hour" in values:
        gpu = replace(gpu, usd_per_hour=values["usd_per_hour"])
    return Card(gpu, values["count"], values.get("owned", False), values.get("price_usd"),
                values.get("host_ram_gib"))


def _variants(entries: Any, base_dir: Path | None, pool: tuple[Card, ...]) -> tuple[Variant, ...]:
    if not isinstance(entries, list) or not entries:
        raise ProjectError("no [[variant]] tables: a project needs at least one variant")
    out: list[Variant] = []
    for i, entry in enumerate(entries, 1):
        entry = _table(entry, f"variant {i}")
        name = entry.get("name")
        place = f'variant "{name}"' if isinstance(name, str) and name else f"variant {i}"
        _values(entry, dict.fromkeys(("name", "description", "stage"), _any),
                lambda k, p=place: f'{p}, field "{k}"')
        if not isinstance(name, str) or not name.strip():
            raise ProjectError(f'{place}, field "name": give the variant a name')
        if any(v.name == name for v in out):
            raise ProjectError(f'{place}, field "name": two variants are called {name!r}')
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise ProjectError(f'{place}, field "description": must be text')
        stages = _stages(entry.get("stage"), name, base_dir, pool)
        out.append(Variant(name, stages, description))
    return tuple(out)


def _stages(entries: Any, variant: str, base_dir: Path | None,
            pool: tuple[Card, ...]) -> tuple[Stage, ...]:
    if not isinstance(entries, list) or not entries:
        raise ProjectError(f'variant "{variant}": no [[variant.stage]] tables')
    stages: list[Stage] = []
    for i, entry in enumerate(entries, 1):
        entry = _table(entry, f'stage {i} in variant "{variant}"')
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ProjectError(f'stage {i} in variant "{variant}", field "name": give the '
                               "stage a name")
        if any(s.name == name for s in stages):
            raise ProjectError(f'{where(variant, name, "name")}: two stages have this name')
        stage = _stage(entry, variant, base_dir)
        _check_stage(stage, variant, stages, pool)
        stages.append(stage)
    return tuple(stages)


def _stage(entry: dict[str, Any], variant: str, base_dir: Path | None) -> Stage:
    name = entry["name"]
    values = _values(entry, STAGE_FIELDS, lambda k: where(variant, name, k))
    refs = [k for k in MODEL_KEYS if k in values]
    if len(refs) != 1:
        what = "give one of" if not refs else "give only one of"
        raise ProjectError(f"{where(variant, name, 'model')}: {what} model, config, run, params")
    model = ModelRef(refs[0], values.pop(refs[0]))
    _check_model(model, base_dir, where(variant, name, refs[0]))
    tokens = _volume(values, where(variant, name, "tokens"), variant, name)
    after = values.pop("after", None)
    return Stage(model=model, tokens=tokens, after=tuple(after) if after is not None else None,
                 **values)


def _volume(values: dict[str, Any], place: str, variant: str, name: str) -> float:
    """Tokens per epoch, from ``tokens`` or ``samples`` x ``sample_len`` (else ``seq_len``)."""
    samples, length = values.pop("samples", None), values.pop("sample_len", None)
    tokens = values.pop("tokens", None)
    if (tokens is None) == (samples is None):
        raise ProjectError(f"{place}: give the data volume as tokens, or as samples "
                           "(with sample_len, their mean length in tokens)")
    if samples is not None:
        tokens = samples * (length or values.get("seq_len", DEFAULT_SEQ_LEN))
    elif length is not None:
        raise ProjectError(f"{where(variant, name, 'sample_len')}: goes with samples, not tokens")
    if tokens <= 0:
        raise ProjectError(f"{place}: the stage trains on no data (tokens = 0)")
    return float(tokens)


def _check_model(model: ModelRef, base_dir: Path | None, place: str) -> None:
    if model.kind == "model":
        try:
            preset(str(model.value))
        except ModelError as err:
            raise ProjectError(f"{place}: {err}") from None
    elif model.kind == "config":
        path = config_path(model, base_dir)
        if not path.exists():
            raise ProjectError(f"{place}: no such file {str(path)!r}")


def config_path(model: ModelRef, base_dir: Path | None) -> Path:
    path = Path(str(model.value)).expanduser()
    return path if path.is_absolute() or base_dir is None else base_dir / path


def _check_stage(stage: Stage, variant: str, before: list[Stage], pool: tuple[Card, ...]) -> None:
    at = lambda name: where(variant, stage.name, name)  # noqa: E731
    if stage.method == "qlora" and stage.precision and stage.precision not in QUANTIZED:
        raise ProjectError(f"{at('precision')}: QLoRA keeps the base in nf4 or int8, "
                           f"not {stage.precision}")
    if stage.method != "qlora" and stage.precision in QUANTIZED:
        raise ProjectError(f"{at('precision')}: a {stage.precision} base is trained with "
                           'method = "qlora"')
    names = [s.name for s in before]
    for dep in stage.after or ():
        if dep not in names:
            raise ProjectError(f"{at('after')}: no stage {dep!r} before this one in the variant "
                               "(list stages in the order they can run)")
    if stage.gpu is not None and pool_card(pool, stage.gpu) is None:
        raise ProjectError(f"{at('gpu')}: {stage.gpu!r} is not in the pool")
    if stage.micro_batch and stage.micro_batch > stage.global_batch:
        raise ProjectError(f"{at('micro_batch')}: larger than the global batch "
                           f"({stage.global_batch})")


# ---- Field tables: each converter turns a TOML value into the field's value or raises _Bad


def _any(value: Any) -> Any:
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad(f"must be text, got {value!r}")
    return value


def _count(value: Any) -> float:
    """A number, or a count with a suffix ("2B", "500M", "20k")."""
    number = quantity(value) if isinstance(value, str) else value
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise _Bad(f"not a count: {value!r} (write 2e9, \"2B\" or \"500M\")")
    if number < 0 or number != number or number == float("inf"):
        raise _Bad(f"must be a finite count of zero or more, got {value!r}")
    return float(number)


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Bad(f"must be a whole number of at least 1, got {value!r}")
    return value


def _positive(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise _Bad(f"must be a number above 0, got {value!r}")
    return float(value)


def _non_negative(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise _Bad(f"must be a number of 0 or more, got {value!r}")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"must be true or false, got {value!r}")
    return value


def _fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise _Bad(f"must be a fraction between 0 and 1, e.g. 0.15, got {value!r}")
    return float(value)


def _names(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"must be a list of stage names, e.g. [\"sft\"], got {value!r}")
    return value


def _one_of(*allowed: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if value not in allowed:
            raise _Bad(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return convert


def _framework(value: Any) -> str:
    known = {a for f in FRAMEWORKS.values() for a in (f.name, *f.aliases)}
    if not isinstance(value, str) or value.strip().lower() not in known:
        raise _Bad(f"unknown framework {value!r} (one of {', '.join(FRAMEWORKS)})")
    return value


PROJECT_FIELDS: Mapping[str, Callable[[Any], Any]] = {
    "name": _text, "description": _text, "deadline_days": _positive, "budget_usd": _positive,
    "margin": _fraction,
}
POOL_FIELDS: Mapping[str, Callable[[Any], Any]] = {
    "gpu": _text, "count": _positive_int, "owned": _flag, "usd_per_hour": _non_negative,
    "price_usd": _non_negative, "memory_gib": _positive, "bf16_tflops": _positive,
    "fp8_tflops": _non_negative, "bandwidth_tbs": _positive, "link": _one_of(*LINKS),
    "gpus_per_node": _positive_int, "host_link_gbs": _positive, "host_ram_gib": _positive,
}
STAGE_FIELDS: Mapping[str, Callable[[Any], Any]] = {
    "name": _text, "model": _text, "config": _text, "run": _positive_int, "params": _count,
    "method": _one_of(*TRAINING_METHODS), "tokens": _count, "samples": _positive_int,
    "sample_len": _positive_int, "epochs": _positive, "seq_len": _positive_int,
    "global_batch": _positive_int, "micro_batch": _positive_int,
    "precision": _one_of(*PRECISIONS, *QUANTIZED), "optimizer": _one_of(*OPTIMIZERS[:-1]),
    "framework": _framework, "lora_rank": _positive_int, "recompute": _one_of(*RECOMPUTE),
    "attention": _one_of(*ATTENTION), "after": _names, "gpu": _text, "pilot_model": _text,
    "note": _text,
}


def _values(entry: dict[str, Any], fields: Mapping[str, Callable[[Any], Any]],
            locate: Callable[[str], str]) -> dict[str, Any]:
    """Each value converted by its field's converter; an unknown field or a bad value is an
    error at ``locate(field)``."""
    out = {}
    for key, value in entry.items():
        if key not in fields:
            raise ProjectError(f"{locate(key)}: unknown field{_hint(key, fields)}")
        try:
            out[key] = fields[key](value)
        except (_Bad, TypeError, ValueError) as err:
            raise ProjectError(f"{locate(key)}: {err}") from None
    return out


def _hint(key: str, fields) -> str:
    near = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(fields)})"


def _table(value: Any, place: str) -> dict[str, Any]:
    if value is None:
        raise ProjectError(f"{place} is missing")
    if not isinstance(value, dict):
        raise ProjectError(f"{place} must be a table, got {value!r}")
    return value

