"""What one checkpoint file holds, read without executing anything in it.

Safetensors files are a JSON header behind an 8-byte length; torch's zip files
keep their object tree in ``<archive>/data.pkl``; older torch files and other
pickles are a run of pickles. Pickles are only ever replayed symbolically
(:mod:`tracker.checkpoints.pickles`), never loaded, so a malicious file cannot
run code here. Git-LFS pointer files are recognised by their first line.
"""

from __future__ import annotations

import errno
import json
import re
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracker.checkpoints.pickles import Call, PickleError, Tensor, scan, scan_many
from tracker.readers._common import NotRegularFile, ReaderError, check_depth, open_regular

LFS_MAGIC = b"version https://git-lfs.github.com/spec/v1"
# torch.save's legacy (pre-zip) format starts with this pickled number.
TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
# Bigger headers or object trees than these are not checkpoint metadata.
MAX_HEADER = 100 * 1024 * 1024
MAX_JSON = 64 * 1024 * 1024
UNKNOWN = "contents unknown (unsafe to load here)"
# Tensor names of parameter-efficient adapters (PEFT LoRA, IA3, prompt tuning ...).
_ADAPTER = re.compile(r"lora_|\.lora\.|ia3_|prompt_embeddings|adaption_|\.oft_|\.vera_")


@dataclass
class FileInfo:
    """One file of a checkpoint: its format, its top-level object, and what to warn about."""

    path: Path
    size: int = 0
    mtime: float = 0.0
    # safetensors, torch (a torch.save zip), pickle, json, lfs, other, unreadable.
    format: str = "other"
    value: Any = None
    tensor_names: list[str] | None = None
    dangerous: list[str] = field(default_factory=list)
    records: list[str] = field(default_factory=list)  # a framework's argument classes
    error: str = ""
    lfs_size: int | None = None  # the size the Git-LFS pointer stands for

    @property
    def keys(self) -> list[str]:
        return [str(k) for k in self.value] if isinstance(self.value, dict) else []

    @property
    def readable(self) -> bool:
        """The top-level object could be seen into: a dict, a safetensors header, or an
        object whose fields are plain data (``training_args.bin``)."""
        if self.format == "safetensors" or isinstance(self.value, dict):
            return True
        return isinstance(self.value, Call) and bool(attrs(self.value))

    def warnings(self) -> list[str]:
        name = self.path.name
        out = []
        if self.error:
            out.append(f"{name}: {self.error}")
        elif self.format in ("torch", "pickle") and not self.readable:
            out.append(f"{name}: {UNKNOWN}")
        if self.dangerous:
            out.append(f"{name} would run {', '.join(self.dangerous)} if loaded; "
                       "torch.load(weights_only=True) refuses it: load it only from a source you trust")
        return out

    def notes(self) -> list[str]:
        if not self.records:
            return []
        return [f"{self.path.name} needs torch.load(weights_only=False), which would build "
                f"{', '.join(self.records)}: the training framework's record of its arguments"]


def inspect_file(path: Path, deep: bool = True) -> FileInfo:
    """Read what ``path`` holds; errors become ``error`` text, never exceptions.

    With ``deep`` False only size, time and Git-LFS status are read (for the
    tokenizer files and tensor shards that carry no training state).
    """
    info = FileInfo(path)
    try:
        st = path.stat()
        info.size, info.mtime = st.st_size, st.st_mtime
        with open_regular(path) as f:
            head = f.read(len(LFS_MAGIC))
        if head == LFS_MAGIC and info.size < 1024:
            _read_lfs(info)
        elif not deep:
            return info
        elif path.suffix == ".json":
            _read_json(info)
        elif path.suffix == ".safetensors":
            _read_safetensors(info)
        elif zipfile.is_zipfile(path):
            _read_torch_zip(info)
        elif head[:4] == b"PK\x03\x04":
            raise ValueError("a damaged zip file (cut short while saving?)")
        elif head[:1] == b"\x80":
            _read_pickle(info)
    except (OSError, PickleError, ReaderError, zipfile.BadZipFile, ValueError, struct.error,
            RecursionError, MemoryError) as err:
        info.format, info.error = "unreadable", _reason(err)
    return info


def _reason(err: Exception) -> str:
    if isinstance(err, NotRegularFile):
        return str(err)
    if isinstance(err, OSError):
        if err.errno == errno.ELOOP:
            return "a symlink loop: it points at itself"
        return f"cannot read ({err.strerror or err})"
    if isinstance(err, (RecursionError, MemoryError)):
        return "too deeply nested or too large to inspect"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _read_lfs(info: FileInfo) -> None:
    info.format = "lfs"
    with open_regular(info.path) as f:
        match = re.search(rb"^size (\d+)", f.read(1024), re.MULTILINE)
    info.lfs_size = int(match.group(1)) if match else None


def _read_json(info: FileInfo) -> None:
    if info.size > MAX_JSON:
        raise ValueError("JSON file too large to inspect")
    info.format = "json"
    with open_regular(info.path) as f:
        data = f.read(MAX_JSON + 1)
    check_depth(data)
    try:
        info.value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"invalid JSON ({err})") from None


def _read_safetensors(info: FileInfo) -> None:
    """The header only: an 8-byte little-endian length, then JSON naming every tensor."""
    with open_regular(info.path) as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length > MAX_HEADER or length + 8 > info.size:
            raise ValueError("not a safetensors file (bad header length; truncated?)")
        raw = f.read(length)
        check_depth(raw)
        try:
            header = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError("not a safetensors file (header is not JSON)") from None
    info.format = "safetensors"
    info.value = header.get("__metadata__") or {}
    info.tensor_names = [k for k in header if k != "__metadata__"]


def _read_torch_zip(info: FileInfo) -> None:
    with zipfile.ZipFile(info.path) as archive:
        names = [n for n in archive.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if not names:
            raise ValueError("a zip file, but not one torch.save wrote (no data.pkl)")
        if archive.getinfo(names[0]).file_size > MAX_HEADER:
            raise ValueError("object tree too large to inspect")
        found = scan(archive.read(names[0]))
    _take(info, "torch", found)


def _read_pickle(info: FileInfo) -> None:
    """A plain pickle, or torch's legacy format: magic number, version, sys info, object."""
    with open_regular(info.path) as f:
        first = scan(f)
        if first.value == TORCH_LEGACY_MAGIC:
            *_, found = scan_many(f, 3)
            found.globals |= first.globals
            _take(info, "torch", found)
        else:
            _take(info, "pickle", first)


def _take(info: FileInfo, fmt: str, found) -> None:
    info.format = fmt
    info.value = found.value
    info.dangerous = found.dangerous
    info.records = found.records
    info.tensor_names = state_dict_names(found.value)


# Storage types whose single values can be read from their raw little-endian bytes.
_SCALAR_FORMATS = {"torch.FloatStorage": "<f", "torch.DoubleStorage": "<d",
                   "torch.HalfStorage": "<e", "torch.LongStorage": "<q", "torch.IntStorage": "<i"}


def scalar(path: Path, tensor: Any) -> float | None:
    """The value of a one-element tensor in a torch zip file, read as raw bytes (no unpickling)."""
    fmt = _SCALAR_FORMATS.get(tensor.storage) if isinstance(tensor, Tensor) else None
    if fmt is None or tensor.numel != 1 or not tensor.key:
        return None
    size = struct.calcsize(fmt)
    try:
        with zipfile.ZipFile(path) as archive:
            prefix = next(n for n in archive.namelist() if n.endswith("data.pkl")).rsplit("/", 1)[0]
            raw = archive.read(f"{prefix}/data/{tensor.key}")
    except (OSError, KeyError, StopIteration, zipfile.BadZipFile):
        return None
    start = tensor.offset * size
    return struct.unpack(fmt, raw[start : start + size])[0] if len(raw) >= start + size else None


def state_dict_names(value: Any) -> list[str] | None:
    """Tensor names when ``value`` is a bare state dict (every value a tensor)."""
    if isinstance(value, dict) and value and all(isinstance(v, Tensor) for v in value.values()):
        return [str(k) for k in value]
    return None


def weights_kind(names: list[str] | None) -> str | None:
    """"adapter" when every tensor belongs to an adapter, "full" otherwise."""
    if not names:
        return None
    return "adapter" if all(_ADAPTER.search(n) for n in names) else "full"


def attrs(value: Any) -> dict[str, Any]:
    """The fields of a pickled object (its BUILD state), or of a dict."""
    if isinstance(value, Call) and isinstance(value.state, dict):
        return value.state
    return value if isinstance(value, dict) else {}
