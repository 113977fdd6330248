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

import pickletools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

# A pickle with more opcodes than this is not a checkpoint's metadata; stop reading.
MAX_OPS = 5_000_000

# Callables that run commands, open files, import or evaluate code when a pickle is loaded.
DANGEROUS_MODULES = {
    "os", "posix", "nt", "subprocess", "sys", "shutil", "socket", "runpy", "importlib", "pickle",
    "_pickle", "cPickle", "marshal", "ctypes", "code", "codeop", "pty", "webbrowser", "urllib",
    "http", "requests", "asyncio", "multiprocessing", "signal", "tempfile", "io",
    "types", "operator", "functools", "commands", "pip", "setuptools",
}
DANGEROUS_BUILTINS = {
    "eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "input", "breakpoint", "apply", "execfile", "file", "reload", "memoryview",
}

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
        """Globals that would run commands or code if the file were loaded normally."""
        return sorted(g.qualname for g in self.globals if is_dangerous(g))



class PickleError(ValueError):
    """Bytes that are not a pickle this scanner can follow."""


def is_dangerous(g: Global) -> bool:
    if g.module in ("builtins", "__builtins__"):
        return g.name.split(".")[0] in DANGEROUS_BUILTINS or "." in g.name
    # A dotted name reaches a method through its class (pathlib.Path.write_text).
    return "." in g.name or g.module.split(".")[0] in DANGEROUS_MODULES


def scan(source: bytes | IO[bytes]) -> Scan:
    """Replay one pickle's opcodes symbolically; see the module docstring."""
    machine = _Machine()
    try:
        for count, (op, arg, _pos) in enumerate(pickletools.genops(source)):
            if count > MAX_OPS:
                raise PickleError("pickle too large to inspect")
            if op.name == "STOP":
                return Scan(machine.stack.pop(), machine.globals)
            machine.step(op, arg)
    except (ValueError, IndexError, KeyError, TypeError) as err:
        if isinstance(err, PickleError):
            raise
        raise PickleError(f"not a readable pickle ({err})") from None
    raise PickleError("truncated pickle")


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
            return list(args[0]) if args and isinstance(args[0], (list, tuple)) else []
        if name.startswith(("torch._utils._rebuild_tensor", "torch._utils._rebuild_parameter")):
            return _tensor(name, args)
        return Call(func, args)


def _tensor(name: str, args: tuple) -> Any:
    if "parameter" in name:  # _rebuild_parameter(data, requires_grad, hooks)
        return args[0] if args else Tensor(())
    storage = args[0] if args else None
    shape = args[2] if len(args) > 2 and isinstance(args[2], (tuple, list)) else ()
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
            try:
                target[key] = value
            except TypeError:  # an unhashable key: keep the entry under its text
                target[repr(key)] = value
        elif isinstance(target, Call):
            target.items.append((key, value))


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
