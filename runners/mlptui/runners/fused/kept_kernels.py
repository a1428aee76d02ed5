"""The compiled gate/up kernels a process launched directly, kept by their place in Triton's own cache, so a
new process's first call at a tuned bucket loads the binary and launches it without Triton's JIT dispatcher.

Triton's dispatcher, on a process's first launch of a kernel, binds and specializes the arguments (importing
Triton's experimental front end on the way), computes the compiler's cache key (Triton's installation key,
the CUDA toolchain's version from a subprocess) and only then finds the binary on disk. The launcher checks
the compiled kernel's own launch against the dispatcher's once (bit for bit) before it trusts it; after such a
check it records here what Triton needs to rebuild that compiled kernel from its cache folder: the folder's
hash, the kernel's name, its signature and constants. A later process with the same kernel sources, Triton
and GPU model (the record's stamp) rebuilds it from those files and launches it directly.

A record is only a pointer: where the stamp differs, the record is damaged or its arguments are not the
kernel's in order, Triton's cache lost the files, a launch hook (a profiler) is set or anything in the
rebuild raises, the caller takes the dispatcher's path as before (and records again).

On unless MLPTUI_KEPT_KERNELS=off. A launch whose arguments do not match the binary corrupts the process's
CUDA context; a first form, which kept the signature in the file's sorted key order, did exactly that, and
a GPU test now launches a recorded kernel in a second process and compares its output bit for bit
(benchmarks/FUSED_NOTES.md, "The first call without Triton's dispatcher").
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from mlptui.runners.fused import tuning_cache

# What the launcher passes after the grid and the kernel's handles: the argument layout a record was
# checked with. A change to GateUpLauncher's direct launch must change this.
LAUNCH_LAYOUT = "x,w0,w1,h,gu,m,n,k,stride_x,stride_w0,stride_w1,stride_h,stride_gu,BLOCK_M,BLOCK_N,BLOCK_K," \
                "GROUP_M,NUM_PROGRAMS,USE_TMA,INTERLEAVED,FLATTEN,STORE_GU,UPCAST"


def enabled() -> bool:
    return os.environ.get("MLPTUI_KEPT_KERNELS", "") != "off"


def records_file(tuning_file: Path) -> Path:
    """Beside the tuning cache's file for the same GPU model and Triton version."""
    return tuning_file.with_name(f"kernels-{tuning_file.name}")


@lru_cache(maxsize=1)
def source_stamp() -> str:
    """A digest of the kernels' source file, the launch layout and the environment variables Triton puts
    in its own cache key: a record made under another of these points at another binary."""
    from mlptui.runners.fused import kernels

    h = hashlib.sha256(Path(kernels.__file__).read_bytes())
    h.update(LAUNCH_LAYOUT.encode())
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars

        h.update(repr(sorted(get_cache_invalidating_env_vars().items())).encode())
    except (ImportError, AttributeError):
        h.update(b"no-env")
    return h.hexdigest()


def record_key(entry: str, label: str, programs: int, spec: int) -> str:
    """One compiled variant: the tuning entry (dims, dtype, bucket, path), the plan, the grid and the row
    count's integer specialization (Triton compiles 1, multiples of 16 and other counts apart)."""
    return f"{entry}|{label}|p{programs}|s{spec}"


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def remember(path: Path, key: str, compiled: Any) -> None:
    """Record a compiled kernel whose direct launch was checked. Kernels whose signature or constants do not
    travel as JSON are not recorded (their processes keep the dispatcher's first call). The signature is
    kept as a list: its order is the launch's argument order (the records' file is written with sorted keys)."""
    src = getattr(compiled, "src", None)
    signature = getattr(src, "signature", None)
    constants = getattr(src, "constants", None)
    if not (isinstance(signature, dict) and isinstance(constants, dict) and isinstance(compiled.hash, str)):
        return
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in signature.items()):
        return
    pairs = [[list(k), v] for k, v in constants.items()]
    if not all(isinstance(k, tuple) and all(type(i) is int for i in k) for k in constants) or \
            not all(_plain(v) for _, v in pairs):
        return
    tuning_cache.store_record(path, key, {"stamp": source_stamp(), "hash": compiled.hash, "name": compiled.name,
                                          "signature": [[k, v] for k, v in signature.items()],
                                          "constants": pairs})


def rebuilt_source(record: Any, kernel: Any) -> Any:
    """The ASTSource Triton compiled the recorded kernel from (its launcher is made from the signature and
    constants), or None where the record does not fit `kernel`: another stamp, another name, or arguments
    other than the kernel's, in its order."""
    if not isinstance(record, dict) or record.get("stamp") != source_stamp():
        return None
    signature, constants = record.get("signature"), record.get("constants")
    if record.get("name") != getattr(kernel, "__name__", None) or not isinstance(record.get("hash"), str) or \
            not isinstance(signature, list) or not isinstance(constants, list):
        return None
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(v, str) for v in p) for p in signature) or \
            [name for name, _ in signature] != list(kernel.arg_names):
        return None
    if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], list) and p[0] and
               all(type(i) is int and 0 <= i < len(signature) for i in p[0][:1]) and _plain(p[1]) for p in constants):
        return None
    from triton.compiler.compiler import ASTSource

    return ASTSource(kernel, dict((name, ty) for name, ty in signature), {tuple(k): v for k, v in constants})


def load(path: Path, key: str, kernel: Any) -> tuple[Any, Any, Any] | None:
    """(run, function, packed metadata) of the recorded kernel, loaded from Triton's cache, or None."""
    record = tuning_cache.record(path, key)
    src = rebuilt_source(record, kernel)
    if src is None:
        return None
    try:
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime.cache import get_cache_manager

        group = get_cache_manager(record["hash"]).get_group(f"{record['name']}.json")
        if not group:
            return None
        compiled = CompiledKernel(src, group, record["hash"])
        if compiled.name != record["name"]:
            return None
        run = compiled.run  # loads the module and makes the launcher (raises where the device cannot run it)
        return run, compiled.function, compiled.packed_metadata
    except Exception:  # noqa: BLE001 (any failure: the dispatcher's path, which reports its own errors)
        return None
