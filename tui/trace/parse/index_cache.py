"""The index cache: the indexed form of a trace file, kept in the user's cache folder for the next open.

    lookup(path, source) -> Trace | None      the cached index of this exact file, or None
    store(path, trace, args_facts)            save it (never raises; an unwritable folder is skipped)
    companion_key / companion_lookup / companion_store
                                              figures computed later from the file's args, kept beside it

Where: `$XDG_CACHE_HOME/mlptui/index` (default `~/.cache/mlptui/index`), never beside the trace; one
`<sha of the real path>.npz` per trace file (numpy's own format, columns from mlptui.trace.parse.columns,
read with allow_pickle=False). An entry is used only if its key matches the file now: the cache format,
the indexing code (a hash of the modules that build the index, so any change to them rebuilds), the
file's size and mtime, and a hash of its first and last MiB. A damaged entry is treated as missing and
rewritten; entries are written to a temp file in the same folder and renamed into place, so a reader
never sees half an entry. `MLPTUI_NO_CACHE=1` turns the cache off. Traces under MIN_BYTES are not cached
(they load faster than an entry is written).

A companion entry, `<sha>.<name>.npz` beside the index entry, keeps columns that are computed after the
load by re-reading the file's args (the kernels' launch columns: mlptui.trace.parse.launch), so that a
reopened trace does not re-read the file for them. Its key is the index entry's, plus its name and a hash
of the modules that compute it; it also holds the rows it was computed for (event numbers), and a lookup
for other rows is a miss. It is read and written only while the file is the one the trace was loaded
from, and under the same rules as the index entry.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mlptui.base.files import atomic_writer
from mlptui.trace.model import Trace
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.columns import trace_columns, trace_from_columns

FORMAT = 2                 # bump when the entry layout changes (2: memory events)
MIN_BYTES = 1 << 20        # smaller traces load in a few ms: not worth an entry
_EDGE = 1 << 20            # bytes hashed at each end of the file
_CODE_MODULES = ("model", "parse/columns", "parse/classify", "parse/decode", "parse/index", "parse/tree")
# the modules whose code a companion's columns depend on, besides the indexer's
_COMPANION_MODULES = {"launch": ("parse/launch", "parse/args_store")}


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/mlptui/index` (default `~/.cache/mlptui/index`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlptui" / "index"


def enabled() -> bool:
    return os.environ.get("MLPTUI_NO_CACHE", "") in ("", "0")


def entry_path(path: Path) -> Path:
    real = os.path.realpath(path)
    return cache_dir() / (hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".npz")


def load_cached(path: Path, source: str) -> Trace | None:
    """The trace at `path` from its cache entry, with an args reader for the file, or None."""
    hit = lookup(path, source)
    if hit is None:
        return None
    trace, facts = hit
    key = facts["key"]
    trace._args = ArgsStore(facts["events"], path=path, stamp=(key["size"], key["mtime_ns"]),
                            repair_utf8=facts["repair_utf8"], cut=facts["cut"],
                            suffix=facts["suffix"].encode("latin-1"))
    return trace


# What reading a missing, unreadable or damaged entry raises (np.load, its members, the key's JSON).
UNREADABLE = (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile,
              orjson.JSONDecodeError)


def remember(path: Path, trace: Trace) -> bool:
    """Cache a trace just loaded from `path` (not one whose args live in memory: those are rare and small)."""
    store_ = trace._args
    facts = store_.reread_facts() if isinstance(store_, ArgsStore) else None
    return facts is not None and store(path, trace, facts)


def lookup(path: Path, source: str) -> tuple[Trace, dict[str, Any]] | None:
    """(trace, args_facts) from the cache when an entry matches the file as it is now, else None."""
    if not enabled():
        return None
    try:
        key = file_key(path)
        if key["size"] < MIN_BYTES:
            return None
        with np.load(entry_path(path), allow_pickle=False) as npz:
            stored = orjson.loads(npz["key"].tobytes())
            if stored != key:
                return None
            cols = {name: npz[name] for name in npz.files if name not in ("key", "args")}
            facts = orjson.loads(npz["args"].tobytes())
        facts["key"] = key
        return trace_from_columns(cols, source), facts
    except UNREADABLE:
        return None      # missing, unreadable or damaged: load the trace and write the entry anew


def has_entry(path: Path) -> bool:
    """Whether a usable entry for the file as it is now exists (reads only the entry's key)."""
    if not enabled():
        return False
    try:
        with np.load(entry_path(path), allow_pickle=False) as npz:
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
        cols = trace_columns(trace)
        cols["key"] = np.frombuffer(orjson.dumps(key), dtype=np.uint8)
        cols["args"] = np.frombuffer(orjson.dumps(args_facts), dtype=np.uint8)
        return _write(entry_path(path), cols)
    except (OSError, ValueError, TypeError):
        return False


def _write(target: Path, arrays: dict[str, np.ndarray]) -> bool:
    """Write `arrays` as one .npz at `target`, atomically (a reader never sees half an entry)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(target) as f:
        np.savez(f, allow_pickle=False, **arrays)
    return True


def companion_path(path: Path, name: str) -> Path:
    """`<sha>.<name>.npz`, beside the index entry of `path`."""
    return entry_path(path).with_suffix(f".{name}.npz")


def companion_key(path: Path, name: str, loaded: tuple[int, int]) -> dict[str, Any] | None:
    """The key of companion `name` for the file at `path`, or None when the cache is off, the file is under
    MIN_BYTES or unreadable, or it is not the file the trace was loaded from (`loaded`: its size and mtime
    then, what the trace's args store re-reads it by)."""
    if not enabled():
        return None
    try:
        key = file_key(path)
    except OSError:
        return None
    if key["size"] < MIN_BYTES or (key["size"], key["mtime_ns"]) != tuple(loaded):
        return None
    return {**key, "companion": name, "companion_code": _companion_stamp(name)}


def companion_lookup(path: Path, key: dict[str, Any], rows: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The columns of companion entry `key` when it matches and was computed for exactly `rows` (name ->
    array, compared by dtype, shape and value); None when missing, damaged or for anything else."""
    try:
        with np.load(companion_path(path, key["companion"]), allow_pickle=False) as npz:
            if orjson.loads(npz["key"].tobytes()) != key:
                return None
            for name, want in rows.items():
                have = npz[f"rows_{name}"]
                if have.dtype != want.dtype or have.shape != want.shape or not np.array_equal(have, want):
                    return None
            return {name: npz[name] for name in npz.files if name != "key" and not name.startswith("rows_")}
    except UNREADABLE:
        return None


def companion_store(path: Path, key: dict[str, Any], rows: dict[str, np.ndarray], cols: dict[str, np.ndarray]) -> bool:
    """Write companion entry `key`: `cols` computed for `rows`; False (and nothing left behind) when it
    cannot be written."""
    try:
        arrays = {f"rows_{name}": np.asarray(a) for name, a in rows.items()}
        arrays.update((name, np.asarray(a)) for name, a in cols.items())
        arrays["key"] = np.frombuffer(orjson.dumps(key), dtype=np.uint8)
        return _write(companion_path(path, key["companion"]), arrays)
    except (OSError, ValueError, TypeError):
        return False


# Keys already computed in this block of work, by the file's identity (device, inode, size, mtime, ctime):
# see `keys_remembered`.
_KNOWN_KEYS: ContextVar[dict[tuple[int, ...], dict[str, Any]] | None] = ContextVar("known_keys", default=None)
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


@contextmanager
def keys_remembered(known: dict[Path, dict[str, Any]] | None = None) -> Iterator[None]:
    """Within the block, hash each file once: a file whose identity has not changed since its key was
    computed (here, or by the caller: `known`, path -> key) gets that key back. Any write to the file
    changes its ctime, so a changed file is hashed again."""
    memo: dict[tuple[int, ...], dict[str, Any]] = {}
    for path, key in (known or {}).items():
        try:
            ident = _identity(os.stat(path))
        except OSError:
            continue
        if (key.get("size"), key.get("mtime_ns")) == (ident[2], ident[3]):
            memo[ident] = key
    token = _KNOWN_KEYS.set(memo)
    try:
        yield
    finally:
        _KNOWN_KEYS.reset(token)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_key(path: Path) -> dict[str, Any]:
    """What identifies the file's content for the cache (see the module docstring)."""
    memo = _KNOWN_KEYS.get()
    if memo is not None:
        try:
            hit = memo.get(_identity(os.stat(path)))
        except OSError:
            hit = None
        if hit is not None:
            return hit
    key, ident = _hash_key(path)
    if memo is not None:
        memo[ident] = key
    return key


def _hash_key(path: Path) -> tuple[dict[str, Any], tuple[int, ...]]:
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        h = hashlib.blake2b(digest_size=16)
        h.update(f.read(_EDGE))
        if st.st_size > _EDGE:
            f.seek(max(st.st_size - _EDGE, _EDGE))
            h.update(f.read(_EDGE))
    return ({"format": FORMAT, "code": _code_stamp(), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
             "edges": h.hexdigest()}, _identity(st))


_CODE: str | None = None
_COMPANION_CODE: dict[str, str] = {}


def _code_stamp() -> str:
    """A hash of the source of the modules that build an index: a changed indexer never reads old entries."""
    global _CODE
    if _CODE is None:
        _CODE = _hash_sources(_CODE_MODULES)
    return _CODE


def _companion_stamp(name: str) -> str:
    """The same for the modules that compute companion `name`'s columns."""
    stamp = _COMPANION_CODE.get(name)
    if stamp is None:
        stamp = _COMPANION_CODE[name] = _hash_sources(_COMPANION_MODULES[name])
    return stamp


def _hash_sources(modules: tuple[str, ...]) -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(digest_size=12)
    for name in modules:
        h.update((root / f"{name}.py").read_bytes())
    return h.hexdigest()
