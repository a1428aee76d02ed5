"""The index cache: the indexed form of a trace file, kept in the user's cache folder for the next open.

    lookup(path, source) -> Trace | None      the cached index of this exact file, or None
    store(path, trace, args_facts)            save it (never raises; an unwritable folder is skipped)

Where: `$XDG_CACHE_HOME/mlptui/index` (default `~/.cache/mlptui/index`), never beside the trace; one
`<sha of the real path>.npz` per trace file (numpy's own format, columns from mlptui.trace.parse.columns,
read with allow_pickle=False). An entry is used only if its key matches the file now: the cache format,
the indexing code (a hash of the modules that build the index, so any change to them rebuilds), and the
file's identity as the kernel keeps it: device, inode, size, mtime_ns and ctime_ns. The ctime covers the
whole file for the price of a stat: any write to the file (an edit in place that keeps its size and
restores its mtime included) moves it, and no program can set it back. An entry whose key matches is
still checked before use (cache_check: dtypes, shapes, every index in range); a damaged entry is deleted
and the trace indexed and written anew. Entries are written to a temp file in the same folder and
renamed into place, so a reader never sees half an entry; the folder is kept under a size cap, least
recently used entries first (cache_folder). `MLPTUI_NO_CACHE=1` turns the cache off. Traces under
MIN_BYTES are not cached (they load faster than an entry is written). A relative XDG_CACHE_HOME is
ignored, as the XDG spec asks (the cache never lands in the current folder).

On a shared machine: the folders are 0700 and the entries 0600, and a folder that is a symbolic link,
another user's, or writable by others is not used at all (mlptui.base.private_folder; `refusal()` is
the one line that says so). An entry is opened without following links and only if a regular file, and
every part of it is checked: the columns (cache_check) and the JSON parts (cache_check_parts). An entry
too big to read into memory is copied to an unnamed file of this process before it is mapped, so that
whatever changes the entry in place afterwards cannot change (or truncate) what is mapped.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
import stat
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from mlptui.base.files import atomic_writer
from mlptui.base.private_folder import UnsafeFolder, private_folder, user_cache_base
from mlptui.base.regular_file import identity
from mlptui.trace.model import Trace
from mlptui.trace.parse import cache_folder
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.cache_check import check_entry
from mlptui.trace.parse.cache_check_parts import check_facts, check_small
from mlptui.trace.parse.columns import trace_columns, trace_from_columns

FORMAT = 3                 # bump when the entry layout changes (2: memory events, 3: launch columns)
MIN_BYTES = 1 << 20        # smaller traces load in a few ms: not worth an entry
_CODE_MODULES = ("model", "store", "parse/columns", "parse/classify", "parse/decode", "parse/index", "parse/launch",
                 "parse/tree")


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/mlptui/index` (default `~/.cache/mlptui/index`; a relative XDG_CACHE_HOME is
    invalid by the XDG spec and ignored)."""
    return user_cache_base() / "mlptui" / "index"


def open_folder() -> tuple[Path | None, str | None]:
    """(the cache folder, made where missing and checked; None when it may not be used, and then why, or
    None when it simply cannot be made: a read-only home)."""
    try:
        return private_folder(user_cache_base(), ("mlptui", "index")), None
    except UnsafeFolder as exc:
        return None, f"index cache not used: {exc}; working without it"
    except OSError:
        return None, None


def refusal(file_size: int) -> str | None:
    """The one line to show with a trace of `file_size` bytes read without the cache because its folder
    may not be trusted; None when the cache was not refused (or not wanted)."""
    if not enabled() or file_size < MIN_BYTES:
        return None
    return open_folder()[1]


def enabled() -> bool:
    return os.environ.get("MLPTUI_NO_CACHE", "") in ("", "0")


def entry_path(path: Path, folder: Path | None = None) -> Path:
    """Where the entry of the file at `path` is (in `folder`, default cache_dir())."""
    real = os.path.realpath(path)
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".npz"
    return (cache_dir() if folder is None else folder) / name


def load_cached(path: Path, source: str, st: os.stat_result | None = None) -> Trace | None:
    """The trace at `path` from its cache entry, with an args reader for the file, or None. `st`: the
    file's stat when the caller holds it open (the key is then of the very file it reads)."""
    hit = lookup(path, source, st)
    if hit is None:
        return None
    trace, facts = hit
    key = facts["key"]
    return replace(trace, _args=ArgsStore(facts["events"], path=path, stamp=(key["size"], key["mtime_ns"]),
                                          repair_utf8=facts["repair_utf8"], cut=facts["cut"],
                                          suffix=facts["suffix"].encode("latin-1")))


# What reading a missing, unreadable or damaged entry raises (np.load, its members, the key's JSON).
UNREADABLE = (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile,
              orjson.JSONDecodeError)


def remember(path: Path, trace: Trace) -> bool:
    """Cache a trace just loaded from `path` (not one whose args live in memory: those are rare and small)."""
    store_ = trace._args
    facts = store_.reread_facts() if isinstance(store_, ArgsStore) else None
    return facts is not None and store(path, trace, facts)


def lookup(path: Path, source: str, st: os.stat_result | None = None) -> tuple[Trace, dict[str, Any]] | None:
    """(trace, args_facts) from the cache when an entry matches the file as it is now and passes its
    checks, else None (a damaged entry is deleted on the way)."""
    if not enabled():
        return None
    try:
        key = file_key(path, st)
    except OSError:
        return None
    if key["size"] < MIN_BYTES:
        return None
    folder = open_folder()[0]
    if folder is None:
        return None
    entry = entry_path(path, folder)
    try:
        with open_entry(entry) as f, np.load(f, allow_pickle=False) as npz:
            stored = orjson.loads(npz["key"].tobytes())
            if stored != key:
                return None
            facts = orjson.loads(npz["args"].tobytes())
            check_facts(facts, key["size"])
            if os.fstat(f.fileno()).st_size > map_above():
                cols = mapped_members(f, folder)
            else:
                cols = {name: npz[name] for name in npz.files}
            cols.pop("key", None)
            cols.pop("args", None)
        check_entry(cols, facts)
        check_small(orjson.loads(cols["small"].tobytes()), key["size"])
        trace = trace_from_columns(cols, source)
    except FileNotFoundError:
        return None
    except (*UNREADABLE, MemoryError, OverflowError):
        cache_folder.discard(entry)      # damaged: never trusted, never read again
        return None
    facts["key"] = key
    cache_folder.touch(entry)
    return trace, facts


_OPEN_ENTRY = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def open_entry(entry: Path) -> BinaryIO:
    """An entry opened for reading: never through a symbolic link (OSError), and only if it is a regular
    file (ValueError; O_NONBLOCK keeps a named pipe put in its place from blocking the open)."""
    fd = os.open(entry, _OPEN_ENTRY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{entry.name}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


def map_above() -> int:
    """Entries larger than this are mapped from disk instead of read: a quarter of the memory free now
    (a trace too big to index here may still open from the entry written on a bigger machine)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError):
        return 1 << 62


def mapped_members(f: BinaryIO, folder: Path) -> dict[str, np.ndarray]:
    """Every array of the open .npz entry `f` (written uncompressed by np.savez) as a read-only view of one
    memory map of a private copy of it (private_copy): pages are read when touched, and the kernel may drop
    them again. Raises ValueError for a member that is compressed, of an object dtype, or outside the file."""
    out: dict[str, np.ndarray] = {}
    with private_copy(f, folder) as copy, zipfile.ZipFile(copy) as zf:
        whole = mmap.mmap(copy.fileno(), 0, access=mmap.ACCESS_READ)
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError(f"entry member {info.filename} is not a stored array")
            copy.seek(info.header_offset)
            local = copy.read(30)
            if local[:4] != b"PK\x03\x04":
                raise ValueError("entry member header is damaged")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            copy.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(copy)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(copy)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(copy)
            if dtype.hasobject or fortran or len(shape) != 1:
                raise ValueError(f"entry member {info.filename} is not a plain column")
            at = copy.tell()
            if at + dtype.itemsize * shape[0] > len(whole):
                raise ValueError(f"entry member {info.filename} runs past the file")
            out[info.filename[:-4]] = np.frombuffer(whole, dtype=dtype, count=shape[0], offset=at)
    return out


def private_copy(f: BinaryIO, folder: Path) -> BinaryIO:
    """A copy of the open file `f` in a file of `folder` that has no name (O_TMPFILE, or one unlinked at
    once): no other process can open it, so what is mapped from it cannot change under the map. Entries
    are replaced by renaming, never written in place, so this copy costs only what an edit by hand
    would otherwise break: a write in place after the checks, or a truncation (SIGBUS on the next read)."""
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600)
    except (AttributeError, OSError):
        fd, name = tempfile.mkstemp(prefix=".tmp-map-", dir=folder)
        os.unlink(name)
    copy = open(fd, "w+b")
    try:
        size, done = os.fstat(f.fileno()).st_size, 0
        try:
            while done < size and (n := os.copy_file_range(f.fileno(), fd, size - done, done, done)):
                done += n
        except (AttributeError, OSError):      # no in-kernel copy here (not Linux, or not between these files)
            f.seek(0)
            copy.seek(0)
            copy.truncate()
            shutil.copyfileobj(f, copy, 8 << 20)
        copy.flush()
        copy.seek(0)
    except BaseException:
        copy.close()
        raise
    return copy


def has_entry(path: Path) -> bool:
    """Whether a usable entry for the file as it is now exists (reads only the entry's key)."""
    if not enabled():
        return False
    folder = open_folder()[0]
    if folder is None:
        return False
    try:
        with open_entry(entry_path(path, folder)) as f, np.load(f, allow_pickle=False) as npz:
            return bool(orjson.loads(npz["key"].tobytes()) == file_key(path))
    except UNREADABLE:
        return False


def store(path: Path, trace: Trace, args_facts: dict[str, Any]) -> bool:
    """Write the entry for `path`; False (and nothing left behind) when it cannot be written."""
    if not enabled() or _READ_ONLY.get():
        return False
    try:
        key = file_key(path)
        if key["size"] < MIN_BYTES:
            return False
        folder = open_folder()[0]
        if folder is None:
            return False
        cols = trace_columns(trace)
        cols["key"] = np.frombuffer(orjson.dumps(key), dtype=np.uint8)
        cols["args"] = np.frombuffer(orjson.dumps(args_facts), dtype=np.uint8)
        target = entry_path(path, folder)
        with atomic_writer(target, private=True) as f:
            # no allow_pickle here: numpy < 2.2 would store it as a column; every column is numeric, and the
            # read refuses pickles (np.load(allow_pickle=False))
            np.savez(f, **cols)  # type: ignore[arg-type, unused-ignore]  # numpy >= 2.2 stubs: a keyword is allow_pickle
        cache_folder.keep_under_cap(folder, keep=target)
        return True
    except (OSError, ValueError, TypeError):
        return False


_READ_ONLY: ContextVar[bool] = ContextVar("read_only", default=False)


@contextmanager
def read_only() -> Iterator[None]:
    """Within the block, entries are read but none is written: for work that needs a trace once and keeps
    a smaller result of its own (a rank's digest), where writing the entry would cost more than it saves."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


_KNOWN_KEYS: ContextVar[dict[tuple[int, ...], dict[str, Any]] | None] = ContextVar("known_keys", default=None)


@contextmanager
def keys_remembered(known: dict[Path, dict[str, Any]] | None = None) -> Iterator[None]:
    """Within the block, compute each file's key once: a file whose identity has not changed since its key
    was computed (here, or by the caller: `known`, path -> key) gets that key back."""
    memo: dict[tuple[int, ...], dict[str, Any]] = {}
    for path, key in (known or {}).items():
        try:
            ident = identity(os.stat(path))
        except OSError:
            continue
        if (key.get("size"), key.get("mtime_ns"), key.get("ctime_ns")) == (ident[2], ident[3], ident[4]):
            memo[ident] = key
    token = _KNOWN_KEYS.set(memo)
    try:
        yield
    finally:
        _KNOWN_KEYS.reset(token)


def file_key(path: Path, st: os.stat_result | None = None) -> dict[str, Any]:
    """What identifies the file's content for the cache (see the module docstring): a stat, never a read
    (`st`: the stat of the file as the caller holds it open). Raises OSError for a missing file or one that
    is not a regular file."""
    memo = _KNOWN_KEYS.get()
    if memo is not None:
        try:
            hit = memo.get(identity(st if st is not None else os.stat(path)))
        except OSError:
            hit = None
        if hit is not None:
            return hit
    key, ident = _compute_key(path, st)
    if memo is not None:
        memo[ident] = key
    return key


def _compute_key(path: Path, st: os.stat_result | None = None) -> tuple[dict[str, Any], tuple[int, ...]]:
    if st is None:
        st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a regular file")
    return ({"format": FORMAT, "code": _code_stamp(), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
             "ctime_ns": st.st_ctime_ns, "inode": st.st_ino, "device": st.st_dev}, identity(st))


_CODE: str | None = None


def _code_stamp() -> str:
    """A hash of the source of the modules that build an index: a changed indexer never reads old entries."""
    global _CODE
    if _CODE is None:
        _CODE = _hash_sources(_CODE_MODULES)
    return _CODE


def _hash_sources(modules: tuple[str, ...]) -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(digest_size=12)
    for name in modules:
        h.update((root / f"{name}.py").read_bytes())
    return h.hexdigest()
