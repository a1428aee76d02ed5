"""Limits that keep a hostile file's cost in proportion to what a real trace needs.

- Nesting: values kept from a trace or manifest (deviceProperties, args, manifest runs) are cut at
  MAX_NESTING levels (real traces nest fewer than 10); a document nested deeper than the JSON parser
  goes is refused with one line.
- Gzip: a file may inflate to at most GZIP_RATIO times its size (real traces: 7-30x) and hold at
  most one JSON object per GZIP_BYTES_PER_OBJECT compressed bytes (real: one per 3-10), with floors
  so a small file is never refused; a decompression bomb ends in one line, not in gigabytes of RSS.
- Density: any JSON holding more than one object per MIN_BYTES_PER_OBJECT bytes (real traces: one
  per 96-600) is refused once it is big enough to matter (an event costs ~700 bytes once indexed).
- Names: kernel names are decoded from their first MAX_DECODED_NAME characters (the raw name is kept).
- Size: a file is looked at before it is read whole: its first bytes must be able to start JSON (or
  gzip), and it may be no larger than the machine's memory (max_input_bytes); a gzip stream may inflate
  to no more than that either. A 10 GB sparse file or a multi-gigabyte gzip bomb costs a stat and a
  few kB of reading.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from mlptui.base.errors import TraceError
from mlptui.base.settings import whole_number
from mlptui.base.values import MAX_NESTING, TOO_DEEP, bounded

__all__ = ["MAX_NESTING", "TOO_DEEP", "InflateBudget", "bounded", "check_density", "clean_device", "finite_number"]


GZIP_RATIO = 100
GZIP_MIN_INFLATED = 64 << 20
GZIP_BYTES_PER_OBJECT = 2
GZIP_MIN_OBJECTS = 200_000

MIN_BYTES_PER_OBJECT = 24
DENSITY_MIN_OBJECTS = 400_000          # below this many objects the density rule does not apply
BYTES_PER_INDEXED_OBJECT = 700         # measured upper bound of RSS per decoded + indexed event

_INT64 = (-(1 << 63), 1 << 64)
_COUNT_BLOCK = 1 << 20
_OPEN_BRACE = ord("{")


def _human(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


class InflateBudget:
    """What one gzip input may inflate to; `room()` is the max_length for the next decompress call."""

    def __init__(self, compressed: int, source: str) -> None:
        self.source = source
        self.compressed = compressed
        self.max_bytes = min(max(GZIP_MIN_INFLATED, GZIP_RATIO * compressed), max_input_bytes())
        self.max_objects = max(GZIP_MIN_OBJECTS, compressed // GZIP_BYTES_PER_OBJECT)
        self.inflated = 0
        self.objects = 0

    def room(self) -> int:
        return self.max_bytes - self.inflated + 1

    def add(self, out: bytes) -> bytes:
        self.inflated += len(out)
        self.objects += count_objects(out)
        if self.inflated > self.max_bytes:
            raise TraceError(f"{self.source}: gzip data inflates to more than {_human(self.max_bytes)} "
                             f"({GZIP_RATIO}x the {_human(self.compressed)} file; real traces inflate "
                             "7-30x): refused as a decompression bomb")
        if self.objects > self.max_objects:
            raise TraceError(f"{self.source}: gzip data holds more than {self.max_objects} JSON objects for "
                             f"{_human(self.compressed)} of file (real traces: one per 3-10 compressed bytes; "
                             f"indexing would need ~{_human(self.objects * BYTES_PER_INDEXED_OBJECT)}): "
                             "refused as a decompression bomb")
        return out


def max_input_bytes() -> int:
    """The most bytes of JSON one trace may hold: the machine's physical memory (indexing needs more than
    the text itself, so a larger trace could never open here). `MLPTUI_MAX_INPUT_MB` lowers it."""
    try:
        limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        limit = 1 << 40
    wanted = whole_number("MLPTUI_MAX_INPUT_MB")
    if wanted is not None:
        limit = min(limit, wanted << 20)
    return limit


_CONTENT = re.compile(rb"[^ \t\r\n]")
SPARSE_MIN_BYTES = 64 << 20
SPARSE_RATIO = 100


def check_input(head: bytes, size: int, source: str, allocated: int | None = None) -> None:
    """Refuse, from the file's first bytes, its size and the bytes the disk holds for it (`allocated`, from
    st_blocks), what could never be a trace before reading it whole: bytes that cannot start JSON or gzip,
    more than max_input_bytes, or a big file that is mostly holes (a sparse file reads as zero bytes, which
    JSON never holds; even a compressing file system stores JSON in more than 1/SPARSE_RATIO of its size)."""
    limit = max_input_bytes()
    if size > limit:
        raise TraceError(f"{source}: {_human(size)}, more than this machine's {_human(limit)} of memory could "
                         "index; refused before reading it")
    if allocated is not None and size >= SPARSE_MIN_BYTES and allocated * SPARSE_RATIO < size:
        raise TraceError(f"{source}: a sparse file ({_human(size)} with {_human(allocated)} on disk, the rest "
                         "holes that read as zero bytes): not a trace; refused before reading it")
    if head[:2] == b"\x1f\x8b":
        return
    m = _CONTENT.search(head, 3 if head[:3] == b"\xef\xbb\xbf" else 0)
    if m is not None and head[m.start()] not in b"{[":
        raise TraceError(f"{source}: not JSON (starts with {bytes(head[m.start():m.start() + 12])!r})")


def count_objects(data: bytes | bytearray | memoryview) -> int:
    """How many '{' bytes `data` holds. bytes.count looks at one byte at a time; numpy compares a block
    at a time (blocks of 1 MiB keep the scratch mask in cache), several times faster."""
    import numpy as np  # here, not at the top: the explorer lists traces through this module at start

    arr = np.frombuffer(data, dtype=np.uint8)
    mask = np.empty(min(len(arr), _COUNT_BLOCK), dtype=bool)
    total = 0
    for lo in range(0, len(arr), _COUNT_BLOCK):
        block = arr[lo:lo + _COUNT_BLOCK]
        hits = mask[:len(block)]
        np.equal(block, _OPEN_BRACE, out=hits)
        total += int(np.count_nonzero(hits))
    return total


def too_dense(objects: int, size: int, least: int = DENSITY_MIN_OBJECTS) -> bool:
    """Whether `objects` JSON objects ('{') in `size` bytes are too many to index: more than `least`, and
    one per fewer than MIN_BYTES_PER_OBJECT bytes."""
    return objects > least and objects * MIN_BYTES_PER_OBJECT > size


def check_density(data: bytes | bytearray | memoryview, source: str) -> None:
    """Refuse JSON so dense in objects that indexing it would cost far more memory than its size."""
    size = len(data)
    if size < DENSITY_MIN_OBJECTS * MIN_BYTES_PER_OBJECT // 8:
        return
    objects = count_objects(data)
    if too_dense(objects, size):
        raise TraceError(f"{source}: {objects} JSON objects in {_human(size)} (one per {size / objects:.0f} "
                         f"bytes; real traces: one per 96 or more): indexing would need "
                         f"~{_human(objects * BYTES_PER_INDEXED_OBJECT)}; refused")


def finite_number(value: Any, *, lo: float = 0, hi: float = float(1 << 62)) -> float | None:
    """`value` when it is a real number (not a bool) in [lo, hi], else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if lo <= value <= hi else None


# deviceProperties keys the analyses compute with: numbers, or the device's name.
_DEVICE_NUMBERS = (
    "id", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock", "maxThreadsPerMultiprocessor",
    "regsPerBlock", "regsPerMultiprocessor", "warpSize", "sharedMemPerBlock", "sharedMemPerMultiprocessor",
    "numSms", "sharedMemPerBlockOptin", "maxSharedMemoryPerMultiProcessor", "l2CacheSize", "clockRate",
    "memoryClockRate", "memoryBusWidth",
)


def clean_device(device: dict[str, Any]) -> dict[str, Any]:
    """A deviceProperties entry whose known keys hold values of the right type (others dropped) and
    whose other values are bounded; what is dropped would have broken a computation or the JSON."""
    out = bounded(device)
    if not isinstance(out, dict):
        return {}
    if out is device:
        out = dict(device)
    if "name" in out and not isinstance(out["name"], str):
        del out["name"]
    for key in _DEVICE_NUMBERS:
        if key in out and (finite_number(out[key]) is None or not float(out[key]).is_integer()):
            del out[key]
    for key, value in list(out.items()):
        if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value < _INT64[1]:
            del out[key]        # wider than 64 bits: no real device property, and no JSON writer agrees on it
    return out
