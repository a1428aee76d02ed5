"""The checks of an index-cache entry's JSON parts, beside its columns' (cache_check): the trace's small
values (`small`: device, devices, meta, warnings, origin_us, format) and the args facts (what re-reads
an event's args from the file). Each must be a value the indexer could have written for a file of this
size; anything else would be trusted by every view, or crash one, on every later open.

    check_small(small, file_size)       raises ValueError naming the first part that is wrong
    check_facts(facts, file_size)       the same for the args facts
"""

from __future__ import annotations

import math
from typing import Any

from mlptui.base.values import bounded
from mlptui.trace.parse.limits import GZIP_MIN_INFLATED, GZIP_RATIO, clean_device

_SMALL_KEYS = {"device", "devices", "meta", "warnings", "origin_us", "format"}
_FACT_KEYS = {"events", "repair_utf8", "cut", "suffix"}
_SUFFIXES = ("]", "]}")          # what closes a trace cut short (mlptui.trace.parse.decode)
# meta the indexer writes itself: counts, and never a key that is set only after a load (path)
_META_COUNTS = ("unlinked_gpu_ops", "device_side_events", "events", "malformed_events")
_META_NEVER = ("path", "not_a_trace")


def _count(value: Any, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= most


def most_bytes(file_size: int) -> int:
    """The most bytes of JSON a file of `file_size` bytes may hold (a gzip one inflates to at most this)."""
    return max(GZIP_MIN_INFLATED, GZIP_RATIO * file_size)


def check_facts(facts: Any, file_size: int) -> None:
    if not isinstance(facts, dict) or set(facts) != _FACT_KEYS:
        raise ValueError("the args facts are not the four the indexer writes")
    most = most_bytes(file_size)
    if not _count(facts["events"], most):
        raise ValueError("the args facts' event count is not a count for this file")
    if not isinstance(facts["repair_utf8"], bool):
        raise ValueError("the args facts' repair_utf8 is not true or false")
    cut, suffix = facts["cut"], facts["suffix"]
    if cut is None and suffix == "":
        return
    if not (_count(cut, most) and suffix in _SUFFIXES):
        raise ValueError("the args facts' cut is not an offset in this file with a closing suffix")


def check_small(small: Any, file_size: int) -> None:
    if not isinstance(small, dict) or set(small) != _SMALL_KEYS:
        raise ValueError("the small values are not the six the indexer writes")
    devices, device = small["devices"], small["device"]
    if not isinstance(devices, list) or not all(isinstance(d, dict) and clean_device(d) == d for d in devices):
        raise ValueError("small value devices: not a list of device properties")
    if (device is None) != (not devices) or (device is not None and device not in devices):
        raise ValueError("small value device: not one of the devices")
    warnings = small["warnings"]
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings) or bounded(warnings) is not warnings:
        raise ValueError("small value warnings: not a list of text")
    origin = small["origin_us"]
    if not isinstance(origin, float) or not math.isfinite(origin):
        raise ValueError("small value origin_us: not a finite number")
    if not isinstance(small["format"], str):
        raise ValueError("small value format: not text")
    _check_meta(small["meta"], file_size)


def _check_meta(meta: Any, file_size: int) -> None:
    if not isinstance(meta, dict) or bounded(meta) is not meta:
        raise ValueError("small value meta: not a bounded object")
    if any(key in meta for key in _META_NEVER):
        raise ValueError("small value meta: a key the indexer never writes")
    most = most_bytes(file_size)
    for key in _META_COUNTS:
        if key in meta and not _count(meta[key], most):
            raise ValueError(f"small value meta.{key}: not a count")
    if meta.get("file_bytes") != file_size:
        raise ValueError("small value meta.file_bytes: not the size of this file")
    if "bare_array" in meta and meta["bare_array"] is not True:
        raise ValueError("small value meta.bare_array: not true")
    names = meta.get("process_names")
    if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
        raise ValueError("small value meta.process_names: not names")
    if "trace_name" in meta and meta.get("traceName", meta) != meta["trace_name"]:
        raise ValueError("small value meta.trace_name: not the trace's traceName")
