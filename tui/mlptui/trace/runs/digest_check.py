"""The checks a cached rank digest passes before it is used: it is read from disk, where anything may
have changed it, and one field of the wrong type would crash the run's summary on every later open.

    check_digest(doc)       raises ValueError naming the first field that is not what digest_to_dict writes

Every field of mlptui.trace.analysis.ranks.rank_digest.RankDigest with its type (None where it may be
unknown), whole numbers within 64 bits (all JSON writers agree on those), finite figures, and times
that are not negative where they are lengths (durations, step windows, busy time); the critical path, when
there is one, with its figures and each on-path collective's (call index, start, time on the path), the
index one of the digest's calls.
"""

from __future__ import annotations

import math
from typing import Any

_KEYS = {"rank", "world_size", "backend", "source", "device", "steps", "compute_us", "comm_us", "overlap_us",
         "calls", "host", "path"}
_INT64 = (-(1 << 63), 1 << 63)
# a call's row, as digest_to_dict writes a CallRecord: (what it holds, may be None)
_CALL = (("text", False), ("text", True), ("int", True), ("int", True), ("text", True), ("time", False),
         ("length", False), ("text", True), ("int", True))


def _ok(value: Any, kind: str, optional: bool = False) -> bool:
    if value is None:
        return optional
    if kind == "text":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "int":
        return isinstance(value, int) and _INT64[0] <= value < _INT64[1]
    return math.isfinite(value) and (kind == "time" or value >= 0)


def check_digest(doc: Any) -> None:
    if not isinstance(doc, dict) or set(doc) != _KEYS:
        raise ValueError("the digest does not hold the fields of a rank digest")
    for name, kind, optional in (("rank", "int", False), ("world_size", "int", True), ("backend", "text", True),
                                 ("source", "text", False), ("device", "text", True), ("host", "text", True),
                                 ("compute_us", "length", False),
                                 ("comm_us", "length", False), ("overlap_us", "length", False)):
        if not _ok(doc[name], kind, optional):
            raise ValueError(f"digest field {name}: not {'a number' if kind != 'text' else 'text'}")
    steps = doc["steps"]
    if not isinstance(steps, list) or not all(isinstance(s, list) and len(s) == 2 and _ok(s[0], "text")
                                              and _ok(s[1], "length") for s in steps):
        raise ValueError("digest field steps: not (name, window) pairs")
    calls = doc["calls"]
    if not isinstance(calls, list):
        raise ValueError("digest field calls: not a list")
    for row in calls:
        if not isinstance(row, list) or len(row) != len(_CALL) or not all(
                _ok(v, kind, optional) for v, (kind, optional) in zip(row, _CALL, strict=True)):
            raise ValueError("digest field calls: a row that is not a collective call")
    _check_path(doc["path"], len(calls))


def _check_path(path: Any, n_calls: int) -> None:
    if path is None:
        return
    if not isinstance(path, dict) or set(path) != {"step", "window_us", "length_us", "breakdown_us", "calls"}:
        raise ValueError("digest field path: not a critical path")
    if not (_ok(path["step"], "text") and _ok(path["window_us"], "length") and _ok(path["length_us"], "length")):
        raise ValueError("digest field path: a step, window or length that is not one")
    kinds = path["breakdown_us"]
    if not isinstance(kinds, list) or not all(isinstance(k, list) and len(k) == 2 and _ok(k[0], "text")
                                              and _ok(k[1], "length") for k in kinds):
        raise ValueError("digest field path: a breakdown that is not (kind, µs) pairs")
    rows = path["calls"]
    if not isinstance(rows, list) or not all(
            isinstance(r, list) and len(r) == 3 and _ok(r[0], "int") and 0 <= r[0] < n_calls and _ok(r[1], "time")
            and _ok(r[2], "length") for r in rows):
        raise ValueError("digest field path: an on-path collective that is not one of the calls")
