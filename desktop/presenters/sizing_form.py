"""The sizing wizard's choices as plain data: the Setup they make, what is wrong, the hints.

Qt-free, so tests and the benchmark drive it directly; the wizard's pages
only bind widgets to a :class:`Draft`. What is valid is decided by
``core.memory.check`` (the same rules ``headroom size`` applies); this module
only words its messages for a form instead of a command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from core.gpus import GPU, catalog, find
from core.memory import GIB, Layout, ModelSpec, Setup, SetupError, check, model_states
from core.planner import MARGIN
from core.shape import RunShape
from core.sizing import default_optimizer, default_precision
from desktop.presenters.formatting import compact

METHODS = {"full": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA (quantised base)",
           "inference": "Inference"}
PRECISIONS = {"mixed-bf16": "Mixed BF16", "mixed-fp16": "Mixed FP16", "bf16": "BF16",
              "fp16": "FP16", "fp32": "FP32", "fp8": "FP8 (BF16 master)", "nf4": "NF4 (4-bit)",
              "int8": "INT8"}
OPTIMIZERS = {"adamw": "AdamW", "adamw-8bit": "AdamW 8-bit", "paged-adamw-8bit":
              "Paged AdamW 8-bit", "sgd-momentum": "SGD with momentum", "sgd": "SGD",
              "adafactor": "Adafactor", "none": "None (inference)"}
LORA_TARGETS = {"all-linear": "All linear layers", "attention": "Attention (q, k, v, o)",
                "qv": "q and v only"}
RECOMPUTE = {"none": "None", "selective": "Selective (attention only)",
             "full": "Full (every layer)"}
ATTENTION = {"sdpa": "SDPA attention (PyTorch fused)", "flash": "FlashAttention",
             "eager": "Eager attention (full matrix)"}
SHARDING = {"none": "None (plain data parallel)", "zero1": "ZeRO-1: optimizer state",
            "zero2": "ZeRO-2: + gradients", "zero3": "ZeRO-3: + parameters",
            "fsdp": "FSDP full shard"}
MODES = {"size": "How much memory will my run need, and on which GPUs?",
         "card": "What can my card run?"}
DATA = {"finetune": "A fine-tuning set", "pretrain": "Pretraining, a token budget"}
DEFAULT_PRESET = "llama-3.1-8b"
SOURCES = ("preset", "config", "params")  # remembered model sources (a run belongs to its store)
DEFAULT_CARD = "RTX 4090"
CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. (2022): compute-optimal pretraining
# What-if slider stops: common micro batches and sequence lengths.
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SEQUENCES = (128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
             49152, 65536, 98304, 131072)
# core's messages name command-line flags; a form names its fields.
_WORDING = ((r"--method (q?lora)", lambda m: "LoRA" if m[1] == "lora" else "QLoRA"),
            (r"--gpus 1 ", "1 GPU "), (r"--gpus (\d+)", r"\1 GPUs"), (r" \(--gpus\)", ""),
            (r"--tp", "TP"), (r"--pp", "PP"), (r"--(precision|optimizer)", r"\1"),
            (r" x ", " × "))


@dataclass
class Draft:
    """Everything the wizard asks, with the defaults a first-time user gets."""

    spec: ModelSpec | None = None
    origin: str = ""  # how the model was chosen, for the report
    run_id: int | None = None  # the recorded run it started from
    method: str = "full"
    precision: str = "mixed-bf16"
    optimizer: str = "adamw"
    lora_rank: int = 16
    lora_targets: str = "all-linear"
    micro_batch: int = 1
    grad_accum: int = 1
    seq_len: int = 2048
    recompute: str = "none"
    attention: str = "sdpa"
    framework: str = "hf"
    gpus: list[str] = field(default_factory=list)  # catalog names
    per_node: int = 1
    nodes: int = 1
    sharding: str = "none"
    tp: int = 1
    pp: int = 1
    recommend: bool = False
    max_gpus: int | None = None  # the plans' GPU budget (None: as many as the job needs)
    margin: float = MARGIN
    mode: str = "size"  # a MODES key
    card: str = DEFAULT_CARD  # card mode: the cards the user has
    card_count: int = 1
    source: str = "preset"  # how the model page chose the model, and its value there
    source_value: str = DEFAULT_PRESET
    data: str = "finetune"  # a DATA key: what the token budget is
    samples: int = 10_000  # a fine-tuning set: samples x tokens each x epochs
    sample_len: int = 0  # 0: the sequence length
    epochs: int = 1
    pretrain_tokens: float = 0.0  # 0: Chinchilla's 20 tokens per parameter

    @property
    def n_gpus(self) -> int:
        return self.per_node * self.nodes

    @property
    def tokens(self) -> float:
        """The token budget plans are timed and priced for."""
        if self.pretraining:
            return self.pretrain_tokens or self.chinchilla_tokens
        epochs = self.epochs if self.method != "inference" else 1
        return float(self.samples * (self.sample_len or self.seq_len) * epochs)

    @property
    def pretraining(self) -> bool:
        return self.data == "pretrain" and self.method == "full"

    @property
    def chinchilla_tokens(self) -> float:
        return CHINCHILLA_TOKENS_PER_PARAM * self.spec.total_params if self.spec else 0.0

    def set_method(self, method: str) -> None:
        """A new goal brings its usual precision and optimizer (the user may change them)."""
        self.method = method
        self.precision = default_precision(method)
        self.optimizer = default_optimizer(method)
        if method != "full":
            self.data = "finetune"  # only a full run pretrains

    def remembered(self) -> dict[str, Any]:
        """The model and training choices the wizard offers again next time."""
        return {name: getattr(self, name) for name in REMEMBERED}

    def recall(self, values: dict[str, Any]) -> None:
        """Take back remembered choices, skipping any that no longer make sense."""
        for name, value in values.items():
            default = getattr(Draft, name, None) if name in REMEMBERED else None
            if isinstance(default, float) and isinstance(value, int):
                value = float(value)
            if default is None or type(value) is not type(default):
                continue
            if name in _CHOSEN_FROM and value not in _CHOSEN_FROM[name]():
                continue
            setattr(self, name, value)

    def layout(self) -> Layout:
        zero = int(self.sharding[-1]) if self.sharding.startswith("zero") else 0
        return Layout(n_gpus=self.n_gpus, zero=zero,
                      fsdp="full" if self.sharding == "fsdp" else None, tp=self.tp, pp=self.pp,
                      sequence_parallel=self.tp > 1, gpus_per_node=max(self.per_node, 1))

    def setup(self, with_layout: bool = True) -> Setup:
        """The Setup of these choices (one GPU when ``with_layout`` is off)."""
        return Setup(method=self.method, precision=self.precision, optimizer=self.optimizer,
                     lora_rank=self.lora_rank, lora_targets=self.lora_targets,
                     micro_batch=self.micro_batch, seq_len=self.seq_len,
                     grad_accum=self.grad_accum, recompute=self.recompute,
                     attention=self.attention, framework=self.framework,
                     layout=self.layout() if with_layout else Layout())

    def chosen_gpus(self) -> list[GPU]:
        table = catalog()
        return [table[name] for name in self.gpus if name in table]

    def card_gpu(self) -> GPU:
        """Card mode's GPU model (the default card when the catalog lost the remembered one)."""
        return catalog().get(self.card) or catalog()[DEFAULT_CARD]

    def data_line(self) -> str:
        """What the token budget is, in words."""
        if self.pretraining:
            source = "" if self.pretrain_tokens else ", 20 per parameter (Chinchilla)"
            return f"{compact(self.tokens)} tokens of pretraining{source}"
        length = self.sample_len or self.seq_len
        if self.method == "inference":
            return f"{compact(self.tokens)} tokens: {self.samples:,} requests × {length:,}"
        epochs = "one epoch" if self.epochs == 1 else f"{self.epochs} epochs"
        return (f"{compact(self.tokens)} tokens: {epochs} of {self.samples:,} samples × "
                f"{length:,} tokens")

    def seed(self, spec: ModelSpec, setup: Setup, shape: RunShape) -> None:
        """Start from a recorded run: its model, its setup, its GPUs and layout."""
        self.spec = spec
        for name in ("method", "precision", "optimizer", "lora_rank", "lora_targets",
                     "micro_batch", "grad_accum", "seq_len", "recompute", "attention",
                     "framework"):
            setattr(self, name, getattr(setup, name))
        lay = setup.layout
        self.nodes = max(1, shape.n_nodes or 1)
        self.per_node = max(1, lay.n_gpus // self.nodes)
        self.tp, self.pp = lay.tp, lay.pp
        self.sharding = "fsdp" if lay.fsdp else (f"zero{lay.zero}" if lay.zero else "none")
        gpu = find(shape.gpu_model) if shape.gpu_model else None
        if gpu is not None:  # else the GPUs the user compared last time stay
            self.gpus = [gpu.name]


REMEMBERED = ("mode", "card", "card_count", "source", "source_value", "method", "precision",
              "optimizer", "lora_rank", "lora_targets", "micro_batch", "grad_accum", "seq_len",
              "recompute", "attention", "data", "samples", "sample_len", "epochs",
              "pretrain_tokens")
_CHOSEN_FROM = {"mode": lambda: MODES, "card": catalog, "source": lambda: SOURCES,
                "method": lambda: METHODS, "precision": lambda: PRECISIONS,
                "optimizer": lambda: OPTIMIZERS, "lora_targets": lambda: LORA_TARGETS,
                "recompute": lambda: RECOMPUTE, "attention": lambda: ATTENTION,
                "data": lambda: DATA}


def model_problem(draft: Draft) -> str:
    if draft.spec is None:
        return "Choose a model: a preset, a config.json, a recorded run or a parameter count"
    return ""


def training_problem(draft: Draft) -> str:
    """What makes the training page's choices impossible ("" when none)."""
    if draft.spec is None:
        return "Choose a model first"
    return _problem(draft.spec, draft.setup(with_layout=False))


def hardware_problem(draft: Draft) -> str:
    if draft.spec is None:
        return "Choose a model first"
    if not draft.recommend and not draft.chosen_gpus():
        return "Tick at least one GPU, or let Headroom recommend GPUs and a layout"
    return _problem(draft.spec, draft.setup())


def _problem(spec: ModelSpec, setup: Setup) -> str:
    try:
        check(spec, setup)
    except SetupError as err:
        return plain(str(err))
    return ""


def plain(message: str) -> str:
    """A core message reworded for a form: fields named as the wizard names them."""
    for pattern, replacement in _WORDING:
        message = re.sub(pattern, replacement, message)
    return message[:1].upper() + message[1:]


def hints(draft: Draft) -> list[str]:
    """The seed article's rules of thumb for these choices, with this model's figures."""
    spec = draft.spec
    if spec is None:
        return []
    n = spec.total_params
    per_param = {"full": (16, 20), "lora": (4, 6), "qlora": (0.5, 0.5), "inference": (2, 2)}
    low, high = per_param[draft.method]
    span = _gib_span(n * low, n * high)
    out = [{
        "full": f"Full fine-tuning with mixed-precision AdamW needs ~16–20 bytes per parameter "
                f"before activations (weights 2 + gradients 2 + AdamW 12, and a reserve): {span}.",
        "lora": f"LoRA freezes the base and trains small adapters: ~4–6 bytes per parameter "
                f"all told ({span}).",
        "qlora": f"QLoRA keeps the base in 4 bits, ~0.5 byte per parameter ({span} for the "
                 "base); adapters, their optimizer and the activations come on top.",
        "inference": f"Inference needs ~2 bytes per parameter in BF16 ({span}), plus the KV "
                     "cache for every token in flight.",
    }[draft.method]]
    out.append("Activations grow with micro batch × sequence length × layers: doubling either "
               "roughly doubles them.")
    if draft.method != "inference":
        out.append("Recompute frees about a third of the memory for 20–30 % more time; "
                   "selective recompute (attention only) is often the better balance.")
    if "fp16" in draft.precision:
        out.append("FP16 can overflow (the loss turns NaN); BF16 has the range to avoid it.")
    if draft.precision == "fp32" and draft.method == "full":
        out.append("Pure FP32 doubles the weights and gradients of mixed precision.")
    return out


def static_line(draft: Draft) -> str:
    """The article's first sizing step for these choices: the static memory before activations."""
    if draft.spec is None or training_problem(draft):
        return ""
    static = model_states(draft.spec, draft.setup(with_layout=False))
    total = sum(static.values())
    parts = ", ".join(f"{name} {value / GIB:.1f}" for name, value in static.items())
    per_param = total / draft.spec.total_params
    return (f"Static memory on one GPU, before activations: {parts} = {total / GIB:.1f} GiB "
            f"({per_param:.1f} bytes per parameter)")


def parameter_parts(spec: ModelSpec) -> list[tuple[str, str]]:
    """Where a model's parameters are: embeddings, blocks (attention and MLP), output head."""
    attention = sum(m.params for m in spec.matrices if m.role == "attention")
    mlp = sum(m.params for m in spec.matrices if m.role == "mlp")
    share = spec.block_params / (attention + mlp) if attention + mlp else 0.0
    head = ("tied to the embeddings" if spec.tied_embeddings
            else f"{_count(spec.head_params)} (vocabulary {spec.vocab:,} × hidden {spec.hidden:,})")
    return [
        ("Embeddings", f"{_count(spec.embedding_params)} (vocabulary {spec.vocab:,} × hidden "
                       f"{spec.hidden:,})"),
        ("Transformer blocks", f"{_count(spec.block_params)} in {spec.n_layers} layers: "
                               f"attention {_count(attention * share)}, MLP {_count(mlp * share)}"),
        ("Output head", head),
    ]


def _count(n: float) -> str:
    return f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M"


def _gib_span(low: float, high: float) -> str:
    if abs(high - low) < 1e-9 * high:
        return f"≈ {low / GIB:,.1f} GiB here"
    return f"≈ {low / GIB:,.1f}–{high / GIB:,.1f} GiB here"


def stops(values: tuple[int, ...], current: int) -> list[int]:
    """Slider stops with the user's own value among them."""
    return sorted({*values, current})
