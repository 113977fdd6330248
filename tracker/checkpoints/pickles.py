"""Read what a pickle holds without running it: a symbolic walk over its opcodes.

Loading a pickle calls whatever functions it names, so a checkpoint from the
internet can run code on load. This module never loads one: it decodes the
opcodes with :func:`pickletools.genops` and replays only the stack effects that
build plain data (dicts, lists, tuples, numbers, strings). A call the pickle
asks for becomes an inert :class:`Call` record naming the function; a torch
tensor becomes a :class:`Tensor` with its shape. No module is imported and no
named function is ever looked up, so nothing in the file can run.
"""

from __future__ import annotations

import io
import pickletools
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

# A pickle with more opcodes than this is not a checkpoint's metadata; stop reading (a 7B
# model's state dict takes a few thousand). Nor one that takes longer to follow than this.
MAX_OPS = 2_000_000
MAX_SECONDS = 5.0
# Items copied by the calls replayed as data (list(x), set(x) ...): a few copies of a few
# lists in a real checkpoint; a hostile pickle asks for the same big list a million times.
MAX_WORK = 20_000_000
# Bytes one pickle may take from a stream (a checkpoint's object tree is megabytes, not gigabytes).
MAX_BYTES = 256 * 1024 * 1024

# What torch.load(weights_only=True) lets a pickle name (torch/_weights_only_unpickler.py:
# _get_allowed_globals), and numpy's array reconstruction (HF's rng_state.pth). Loading a pickle
# that names anything else needs weights_only=False, and then the named callable runs.
SAFE_GLOBALS = frozenset({
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.bytearray",
    "builtins.complex", "_codecs.encode",
    "torch.nn.parameter.Parameter", "torch.serialization._get_layout", "torch.Size",
    "torch.Tensor", "torch.device", "torch._tensor._rebuild_from_type_v2",
    "torch.storage.TypedStorage", "torch.storage.UntypedStorage", "torch.UntypedStorage",
    "torch.per_tensor_affine", "torch.per_tensor_symmetric", "torch.per_channel_affine",
    "torch.per_channel_symmetric", "torch.per_channel_affine_float_qparams",
    *(f"torch._utils._rebuild_{kind}" for kind in (
        "parameter", "parameter_with_state", "qtensor", "tensor", "tensor_v2", "tensor_v3",
        "sparse_tensor", "meta_tensor_no_storage", "nested_tensor", "wrapper_subclass",
        "device_tensor_from_numpy", "device_tensor_from_cpu_tensor")),
    *(f"numpy.{core}.multiarray.{name}" for core in ("core", "_core")
      for name in ("_reconstruct", "scalar")),
    "numpy.ndarray", "numpy.dtype",
})
# What HF and accelerate pickle into training_args.bin, the record of a run's arguments that no
# resume loads. torch's weights_only loader refuses these too, so they are reported; but as the
# framework's own record (a note), not as code planted in the file (a warning).
ARGUMENT_RECORDS = frozenset({
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    "transformers.training_args.OptimizerNames", "transformers.trainer_utils.IntervalStrategy",
    "transformers.trainer_utils.SaveStrategy", "transformers.trainer_utils.SchedulerType",
    "transformers.trainer_utils.HubStrategy", "transformers.trainer_utils.FSDPOption",
    "transformers.debug_utils.DebugOption", "transformers.trainer_pt_utils.AcceleratorConfig",
    "accelerate.state.PartialState", "accelerate.utils.dataclasses.DistributedType",
})
# torch's dtypes (torch.float32, torch.bfloat16, torch.float8_e4m3fn ...).
_TORCH_DTYPE = re.compile(r"^(q?u?int|float|complex|bits)\d+(x\d+)?(_[a-z0-9]+)*$"
                          r"|^(bool|half|float|double|long|int|short|cfloat|cdouble|chalf|bfloat16)$")
# torch's legacy tensor and storage classes (torch.FloatStorage, torch.cuda.HalfTensor ...).
_TORCH_CLASS = re.compile(r"^(Byte|Char|Short|Int|Long|Half|Float|Double|ComplexFloat|ComplexDouble"
                          r"|Bool|BFloat16|QUInt8|QInt8|QInt32|QUInt4x2|QUInt2x4)(Storage|Tensor)$")

_MARK = object()


@dataclass(frozen=True)
class Global:
    """A function or class the pickle names; looked up by nothing here."""

    module: str
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass
class Call:
    """An object a real unpickler would build by calling ``func``; never built here."""

    func: Any
    args: Any = ()
    state: Any = None
    items: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.func.qualname if isinstance(self.func, Global) else "?"


@dataclass(frozen=True)
class Tensor:
    """A tensor the pickle describes: its shape, storage type, and where its data is."""

    shape: tuple[int, ...]
    storage: str = ""
    key: str = ""  # the storage's record name in a torch zip file (``data/<key>``)
    offset: int = 0  # in elements

    @property
    def numel(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n


@dataclass(frozen=True)
class Persistent:
    """A reference to data stored outside the pickle (torch's tensor storages)."""

    pid: Any


@dataclass
class Scan:
    """The top-level object as plain data, and every global the pickle names."""

    value: Any
    globals: set[Global] = field(default_factory=set)

    @property
    def dangerous(self) -> list[str]:
        """Globals outside the allowlist: loading the file would call them."""
        return sorted(g.qualname for g in self.globals
                      if not is_safe(g) and g.qualname not in ARGUMENT_RECORDS)

    @property
    def records(self) -> list[str]:
        """A framework's argument classes: loading needs weights_only=False, as for any global."""
        return sorted(g.qualname for g in self.globals if g.qualname in ARGUMENT_RECORDS)



class PickleError(ValueError):
    """Bytes that are not a pickle this scanner can follow."""


def is_safe(g: Global) -> bool:
    """Whether torch's weights_only unpickler (or numpy's array rebuild) allows ``g``."""
    if g.qualname in SAFE_GLOBALS:
        return True
    if g.module == "torch" and _TORCH_DTYPE.match(g.name):
        return True
    return g.module in ("torch", "torch.cuda") and bool(_TORCH_CLASS.match(g.name))


def scan(source: bytes | IO[bytes]) -> Scan:
    """Replay one pickle's opcodes symbolically; see the module docstring."""
    machine = _Machine()
    deadline = time.monotonic() + MAX_SECONDS
    try:
        for count, (op, arg, _pos) in enumerate(pickletools.genops(_Bounded(source))):
            if count > MAX_OPS or (count & 0xFFFF == 0 and time.monotonic() > deadline):
                raise PickleError("pickle too large to inspect")
            if op.name == "STOP":
                return Scan(machine.stack.pop(), machine.globals)
            machine.step(op, arg)
    except (ValueError, IndexError, KeyError, TypeError, OverflowError) as err:
        if isinstance(err, PickleError):
            raise
        raise PickleError(f"not a readable pickle ({str(err)[:100]})") from None
    except (RecursionError, MemoryError):
        raise PickleError("pickle too deeply nested or too large to inspect") from None
    raise PickleError("truncated pickle")


class _Bounded:
    """A stream that gives at most MAX_BYTES: a pickle's length fields can claim anything."""

    def __init__(self, source: bytes | IO[bytes]) -> None:
        self.source = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
        self.left = MAX_BYTES

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > self.left:
            raise PickleError("pickle too large to inspect")
        data = self.source.read(n)
        self.left -= len(data)
        return data

    def readline(self) -> bytes:
        line = self.source.readline(min(self.left, 1 << 20))
        self.left -= len(line)
        return line


def scan_many(stream: IO[bytes], count: int) -> Iterator[Scan]:
    """Consecutive pickles from one stream (torch's legacy format writes several)."""
    for _ in range(count):
        yield scan(stream)


class _Machine:
    """The stack and memo of an unpickler, holding inert values only."""

    def __init__(self) -> None:
        self.stack: list[Any] = []
        self.memo: dict[int, Any] = {}
        self.globals: set[Global] = set()
        self.work = 0

    def charge(self, items: int) -> None:
        """Count items copied; a pickle built to copy without end is given up on."""
        self.work += items
        if self.work > MAX_WORK:
            raise PickleError("pickle asks for too much work to inspect (built to exhaust memory?)")

    def step(self, op: pickletools.OpcodeInfo, arg: Any) -> None:
        handler = _HANDLERS.get(op.name)
        if handler is not None:
            handler(self, arg)
        elif op.name in _LITERALS:
            self.stack.append(arg)
        else:
            self._generic(op)

    def _generic(self, op: pickletools.OpcodeInfo) -> None:
        """Opcodes without a data meaning here: keep the stack depth right, push opaque values."""
        before = op.stack_before
        if pickletools.markobject in before:
            self.pop_mark()
        else:
            for _ in before:
                self.stack.pop()
        self.stack.extend(Call(Global("pickle", op.name)) for _ in op.stack_after)

    def pop(self, n: int) -> list[Any]:
        """The top ``n`` items, bottom first."""
        if len(self.stack) < n or _MARK in self.stack[-n:]:
            raise PickleError("stack underflow")
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def pop_mark(self) -> list[Any]:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] is _MARK:
                items = self.stack[i + 1 :]
                del self.stack[i:]
                return items
        raise PickleError("MARK missing")

    def name(self, module: str, name: str) -> Global:
        module = "builtins" if module == "__builtin__" else str(module)  # protocol 2 spelling
        found = Global(module, str(name))
        self.globals.add(found)
        return found

    def call(self, func: Any, args: Any) -> Any:
        """What a call would return, as data where that is certain, else a Call record."""
        name = func.qualname if isinstance(func, Global) else ""
        args = tuple(args) if isinstance(args, (tuple, list)) else ()
        if name in ("collections.OrderedDict", "builtins.dict"):
            return {}
        if name in ("builtins.set", "builtins.frozenset", "builtins.list", "builtins.tuple"):
            if args and isinstance(args[0], (list, tuple)):
                self.charge(len(args[0]))
                return list(args[0])
            return []
        if name.startswith(("torch._utils._rebuild_tensor", "torch._utils._rebuild_parameter")):
            return _tensor(name, args)
        return Call(func, args)


# A tensor has a handful of dimensions; a longer "shape" is not one.
MAX_DIMS = 64


def _tensor(name: str, args: tuple) -> Any:
    if "parameter" in name:  # _rebuild_parameter(data, requires_grad, hooks)
        return args[0] if args else Tensor(())
    storage = args[0] if args else None
    shape = args[2] if len(args) > 2 and isinstance(args[2], (tuple, list)) else ()
    shape = shape if len(shape) <= MAX_DIMS else ()
    offset = args[1] if len(args) > 1 and isinstance(args[1], int) else 0
    kind, key = "", ""
    pid = storage.pid if isinstance(storage, Persistent) else None
    if isinstance(pid, (tuple, list)) and len(pid) > 2:  # ("storage", type, key, location, numel)
        kind = pid[1].qualname if isinstance(pid[1], Global) else str(pid[1])
        key = str(pid[2])
    return Tensor(tuple(int(d) for d in shape if isinstance(d, int)), kind, key, offset)


def _setitems(m: _Machine, pairs: list[Any]) -> None:
    target = m.stack[-1]
    for key, value in zip(pairs[::2], pairs[1::2], strict=False):
        if isinstance(target, dict):
            target[_plain_key(key)] = value
        elif isinstance(target, Call):
            target.items.append((key, value))


_SCALARS = (str, bytes, float, bool, type(None))


def _plain_key(key: Any) -> Any:
    """A dict key as data: scalars and short flat tuples of them; anything else by its type.

    Hashing a key walks it in C without a depth check, so a tuple nested a
    million deep crashes the interpreter; a huge integer cannot even be printed.
    """
    if isinstance(key, _SCALARS) or (isinstance(key, int) and key.bit_length() <= 64):
        return key
    if isinstance(key, tuple) and len(key) <= 8 and all(
            isinstance(k, _SCALARS) or (isinstance(k, int) and k.bit_length() <= 64) for k in key):
        return key
    return f"<{type(key).__name__} key>"


def _append(m: _Machine, values: list[Any]) -> None:
    target = m.stack[-1]
    if isinstance(target, list):
        target.extend(values)
    elif isinstance(target, Call):
        target.items.extend(values)


def _build(m: _Machine, _arg: Any) -> None:
    state = m.stack.pop()
    target = m.stack[-1]
    if isinstance(target, Call):
        target.state = state


def _get(m: _Machine, index: int) -> None:
    m.stack.append(m.memo[index])


def _reduce(m: _Machine, _arg: Any) -> None:
    args = m.stack.pop()
    func = m.stack.pop()
    m.stack.append(m.call(func, args))


def _newobj(m: _Machine, _arg: Any) -> None:
    args = m.stack.pop()
    cls = m.stack.pop()
    m.stack.append(m.call(cls, args))


def _newobj_ex(m: _Machine, _arg: Any) -> None:
    m.stack.pop()  # keyword arguments
    _newobj(m, _arg)


def _inst(m: _Machine, arg: str) -> None:
    module, name = arg.split(" ", 1)
    m.stack.append(m.call(m.name(module, name), m.pop_mark()))


def _obj(m: _Machine, _arg: Any) -> None:
    items = m.pop_mark()
    m.stack.append(m.call(items[0], items[1:]))


def _stack_global(m: _Machine, _arg: Any) -> None:
    name = m.stack.pop()
    module = m.stack.pop()
    m.stack.append(m.name(module, name))


def _dict_from_mark(m: _Machine, _arg: Any) -> None:
    items = m.pop_mark()
    m.stack.append({})
    _setitems(m, items)


_HANDLERS = {
    "MARK": lambda m, a: m.stack.append(_MARK),
    "POP": lambda m, a: m.stack.pop(),
    "POP_MARK": lambda m, a: m.pop_mark(),
    "DUP": lambda m, a: m.stack.append(m.stack[-1]),
    "EMPTY_DICT": lambda m, a: m.stack.append({}),
    "EMPTY_LIST": lambda m, a: m.stack.append([]),
    "EMPTY_TUPLE": lambda m, a: m.stack.append(()),
    "EMPTY_SET": lambda m, a: m.stack.append([]),
    "DICT": _dict_from_mark,
    "LIST": lambda m, a: m.stack.append(m.pop_mark()),
    "TUPLE": lambda m, a: m.stack.append(tuple(m.pop_mark())),
    "FROZENSET": lambda m, a: m.stack.append(m.pop_mark()),
    "TUPLE1": lambda m, a: m.stack.append(tuple(m.pop(1))),
    "TUPLE2": lambda m, a: m.stack.append(tuple(m.pop(2))),
    "TUPLE3": lambda m, a: m.stack.append(tuple(m.pop(3))),
    "APPEND": lambda m, a: _append(m, m.pop(1)),
    "APPENDS": lambda m, a: _append(m, m.pop_mark()),
    "ADDITEMS": lambda m, a: _append(m, m.pop_mark()),
    "SETITEM": lambda m, a: _setitems(m, m.pop(2)),
    "SETITEMS": lambda m, a: _setitems(m, m.pop_mark()),
    "PUT": lambda m, a: m.memo.__setitem__(a, m.stack[-1]),
    "BINPUT": lambda m, a: m.memo.__setitem__(a, m.stack[-1]),
    "LONG_BINPUT": lambda m, a: m.memo.__setitem__(a, m.stack[-1]),
    "MEMOIZE": lambda m, a: m.memo.__setitem__(len(m.memo), m.stack[-1]),
    "GET": _get,
    "BINGET": _get,
    "LONG_BINGET": _get,
    "GLOBAL": lambda m, a: m.stack.append(m.name(*a.split(" ", 1))),
    "STACK_GLOBAL": _stack_global,
    "REDUCE": _reduce,
    "NEWOBJ": _newobj,
    "NEWOBJ_EX": _newobj_ex,
    "INST": _inst,
    "OBJ": _obj,
    "BUILD": _build,
    "PERSID": lambda m, a: m.stack.append(Persistent(a)),
    "BINPERSID": lambda m, a: m.stack.append(Persistent(m.stack.pop())),
    "EXT1": lambda m, a: m.stack.append(m.name("copyreg.extension", str(a))),
    "EXT2": lambda m, a: m.stack.append(m.name("copyreg.extension", str(a))),
    "EXT4": lambda m, a: m.stack.append(m.name("copyreg.extension", str(a))),
    "NONE": lambda m, a: m.stack.append(None),
    "NEWTRUE": lambda m, a: m.stack.append(True),
    "NEWFALSE": lambda m, a: m.stack.append(False),
    "PROTO": lambda m, a: None,
    "FRAME": lambda m, a: None,
}
_LITERALS = {
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
    "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
}
