"""JSON values read from files (traces, manifests), bounded before anything computes with or writes them.

Real traces and manifests nest fewer than 10 levels; a value nested deeper than MAX_NESTING is cut
there (the JSON writers and `str()` recurse, and orjson stops at 255 levels). Lone surrogates, which
only the stdlib parser lets through and no UTF-8 writer accepts, are repaired to U+FFFD.
"""

from __future__ import annotations

from typing import Any

MAX_NESTING = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
TOO_DEEP = f"<nested deeper than {MAX_NESTING} levels>"


def bounded(value: Any, _depth: int = 0) -> Any:
    """`value` with containers nested deeper than MAX_NESTING replaced by TOO_DEEP and strings holding
    lone surrogates (only the stdlib parser lets them through) repaired to U+FFFD. Returns the same
    object when nothing had to change."""
    if isinstance(value, str):
        return value if value.isascii() else _utf8(value)
    if isinstance(value, dict):
        if _depth >= MAX_NESTING:
            return TOO_DEEP
        out = None
        for k, v in value.items():
            nv = bounded(v, _depth + 1)
            nk = _utf8(k) if isinstance(k, str) and not k.isascii() else k
            if nv is not v or nk is not k:
                if out is None:
                    out = {}
                    for k2, v2 in value.items():
                        if k2 is k:
                            break
                        out[k2] = v2
                out[nk] = nv
            elif out is not None:
                out[k] = v
        return value if out is None else out
    if isinstance(value, list):
        if _depth >= MAX_NESTING:
            return TOO_DEEP
        items = [bounded(v, _depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def narrow_ints(value: Any) -> Any:
    """`value` (already `bounded`) with every integer outside the signed 64-bit range as None: what a
    manifest may hold but no JSON reader is bound to read exactly (RFC 8259, section 6), and what Python
    cannot even turn into text past 4,300 digits. Returns the same object when nothing had to change."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if INT64_MIN <= value <= INT64_MAX else None
    if isinstance(value, dict):
        out = {k: narrow_ints(v) for k, v in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if isinstance(value, list):
        items = [narrow_ints(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _utf8(s: str) -> str:
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
