"""Bytes -> typed raw events, the fast way.

The bulk event stream is decoded by msgspec into small typed structs (no dict per event, no GC
tracking). Of each event's `args` only the keys that linking and naming need are read (LinkArgs);
the rest is skipped by the parser and read back on demand (mlptui.trace.parse.args_store). When a trace holds
values of unexpected types (a hand-edited file, an exotic exporter) the typed decode fails and
`decode_document` falls back to a tolerant per-event path that skips what it cannot use and says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
from msgspec import Raw, Struct

from mlptui.base.errors import TraceError
from mlptui.trace.parse.limits import MAX_NESTING, bounded

_NO_ARGS = Raw(b"")


class LinkArgs(Struct, gc=False):
    """The args keys read during the load: linking ids (old traces spell one in lower case) and the
    `name` of process/thread metadata events."""

    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    external_id_lc: int | None = msgspec.field(default=None, name="external id")
    name: str | None = None


class RawEvent(Struct, gc=False):
    """One Chrome-trace event; only the keys the index reads. Unknown keys are skipped by the decoder."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float | None = None
    id: int | str | None = None
    args: LinkArgs | None = None


# Top-level keys kept as Raw and decoded after the events (a handful of small values).
_META_KEYS = (
    "schemaVersion", "deviceProperties", "distributedInfo", "record_shapes", "with_stack", "profile_memory",
    "with_flops", "with_modules", "cuda_runtime_version", "cuda_driver_version", "cupti_version",
    "hip_runtime_version", "roctracer_version", "displayTimeUnit", "baseTimeNanoseconds", "traceName",
    "trace_id", "INFO",
)


class _Document(Struct, gc=False):
    traceEvents: list[RawEvent] | None = None
    schemaVersion: Raw = _NO_ARGS
    deviceProperties: Raw = _NO_ARGS
    distributedInfo: Raw = _NO_ARGS
    record_shapes: Raw = _NO_ARGS
    with_stack: Raw = _NO_ARGS
    profile_memory: Raw = _NO_ARGS
    with_flops: Raw = _NO_ARGS
    with_modules: Raw = _NO_ARGS
    cuda_runtime_version: Raw = _NO_ARGS
    cuda_driver_version: Raw = _NO_ARGS
    cupti_version: Raw = _NO_ARGS
    hip_runtime_version: Raw = _NO_ARGS
    roctracer_version: Raw = _NO_ARGS
    displayTimeUnit: Raw = _NO_ARGS
    baseTimeNanoseconds: Raw = _NO_ARGS
    traceName: Raw = _NO_ARGS
    trace_id: Raw = _NO_ARGS
    INFO: Raw = _NO_ARGS
    # Keys of a PyTorch *execution* trace (a different file that users confuse with a profiler trace).
    nodes: Raw = _NO_ARGS
    schema: Raw = _NO_ARGS


_DOC = msgspec.json.Decoder(_Document)
_ARRAY = msgspec.json.Decoder(list[RawEvent])


@dataclass
class Decoded:
    events: list[RawEvent]
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    repaired_utf8: bool = False                   # invalid UTF-8 was replaced; re-reads must do the same
    cut: int | None = None                        # a truncated input was cut here and closed with `suffix`
    suffix: bytes = b""
    eager_args: list[dict[str, Any]] | None = None  # full args, when the tolerant path has them anyway


def decode_document(data: bytes | bytearray | memoryview, source: str) -> Decoded:
    """Decode a whole trace. Raises TraceError with one line saying what is wrong and where.

    Usable damage is repaired and reported in `warnings` instead: invalid UTF-8 (replaced), and a file
    that ends early (the events before the cut are kept)."""
    at = _first_at(data)
    if at is None:
        raise TraceError(f"{source}: empty file")
    first = data[at]
    if first not in (ord("{"), ord("[")):
        raise TraceError(f"{source}: not JSON (starts with {bytes(data[at:at + 12])!r})")
    if data[:3] == b"\xef\xbb\xbf":       # a UTF-8 byte order mark: the JSON parsers refuse it
        data = bytes(memoryview(data)[3:])
    try:
        try:
            return _decode_any(data, first, source)
        except UnicodeDecodeError:
            # A stray byte in a name or an args string should not cost the whole trace.
            raw = bytes(data)
            try:
                raw.decode("utf-8")
                where = len(raw)
            except UnicodeDecodeError as exc:
                where = exc.start
            decoded = _decode_any(raw.decode("utf-8", "replace").encode("utf-8"), first, source)
            decoded.warnings.insert(0, f"invalid UTF-8 at byte {where}; replaced bad bytes with U+FFFD")
            decoded.repaired_utf8 = True
            return decoded
    except RecursionError:
        raise TraceError(f"{source}: JSON nested too deeply for the parser (a trace nests fewer than "
                         f"10 levels; values deeper than {MAX_NESTING} are cut)") from None


def _decode_any(data: Any, first: int, source: str) -> Decoded:
    try:
        return _decode_fast(data, first)
    except msgspec.ValidationError:
        return _decode_tolerant(data, source)
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            salvaged = _salvage(data, first, source)
            if salvaged is not None:
                return salvaged
        raise TraceError(f"{source}: {_json_problem(exc, len(data))}") from None


_SALVAGE_TRIES = 8


def _salvage(data: Any, first: int, source: str) -> Decoded | None:
    """A trace cut short (a run killed while writing it): close the event list after the last complete
    event and keep what came before. Tries the last few '}' (one may sit inside a string)."""
    suffix = b"]" if first == ord("[") else b"]}"
    if isinstance(data, memoryview):      # a file read into a buffer: searching backwards needs bytes
        data = data.tobytes()
    end = len(data)
    for _ in range(_SALVAGE_TRIES):
        pos = data.rfind(b"}", 0, end)
        if pos < 0:
            return None
        end = pos
        candidate = bytes(data[:pos + 1]) + suffix
        try:
            try:
                decoded = _decode_fast(candidate, first)
            except msgspec.ValidationError:
                decoded = _decode_tolerant(candidate, source)
        except (msgspec.DecodeError, TraceError):
            continue
        if not decoded.events or "not_a_trace" in decoded.meta:
            continue
        decoded.cut = pos + 1
        decoded.suffix = suffix
        decoded.warnings.insert(0, f"the file ends early (truncated after {len(data)} bytes); "
                                   f"loaded the {len(decoded.events)} events before the cut")
        return decoded
    return None


_CONTENT = re.compile(rb"[^ \t\r\n]")


def _first_at(data: bytes | bytearray | memoryview) -> int | None:
    """Offset of the first byte that is not JSON whitespace (after a UTF-8 BOM), however far in."""
    start = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    m = _CONTENT.search(data, start)
    return None if m is None else m.start()


def _json_problem(exc: Exception, size: int) -> str:
    msg = str(exc)
    if "truncated" in msg:
        return f"truncated JSON: the file ends early ({size} bytes read)"
    return f"not valid JSON ({msg.replace('JSON is malformed: ', '')})"


def _decode_fast(data: Any, first: int) -> Decoded:
    if first == ord("["):
        return Decoded(events=_ARRAY.decode(data), meta={"bare_array": True})
    doc = _DOC.decode(data)
    if doc.traceEvents is None:
        return Decoded(events=[], meta=_not_a_trace(doc))
    return Decoded(events=doc.traceEvents, meta=_meta_of(doc))


def _not_a_trace(doc: _Document) -> dict[str, Any]:
    return {"not_a_trace": "execution" if (doc.nodes or doc.schema) else "no_events"}


def _meta_of(doc: _Document) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in _META_KEYS:
        raw = getattr(doc, key)
        if raw:
            try:
                meta[key] = bounded(orjson.loads(memoryview(raw)))
            except orjson.JSONDecodeError:
                continue
    return meta


def _decode_tolerant(data: Any, source: str) -> Decoded:
    """Slow path for traces with odd value types: keep every event that can be used, count the rest."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # The stdlib parser also takes what orjson refuses but JSON allows: integers beyond 64 bits, NaN.
        try:
            doc = json.loads(bytes(data))
        except UnicodeDecodeError:
            raise          # repaired by decode_document
        except (ValueError, RecursionError):
            raise TraceError(f"{source}: {_json_problem(exc, len(data))}") from None
    meta: dict[str, Any] = {}
    if isinstance(doc, list):
        items: Any = doc
        meta["bare_array"] = True
    elif isinstance(doc, dict):
        items = doc.get("traceEvents")
        if not isinstance(items, list):
            kind = "execution" if ("nodes" in doc or "schema" in doc) else "no_events"
            return Decoded(events=[], meta={"not_a_trace": kind})
        meta = {k: bounded(doc[k]) for k in _META_KEYS if k in doc}
    else:
        raise TraceError(f"{source}: JSON is not a trace (top level is a {type(doc).__name__})")
    events: list[RawEvent] = []
    args: list[dict[str, Any]] = []
    bad = 0
    for item in items:
        event = _event_from_obj(item)
        if event is None:
            bad += 1
        else:
            events.append(event)
            args.append(bounded(item["args"]) if isinstance(item.get("args"), dict) else {})
    warnings = [f"skipped {bad} malformed event(s) (not an object or fields of the wrong type)"] if bad else []
    if bad:
        meta["malformed_events"] = bad
    return Decoded(events=events, meta=meta, warnings=warnings, eager_args=args)


def _event_from_obj(item: Any) -> RawEvent | None:
    if not isinstance(item, dict):
        return None
    args = item.get("args")
    # Strings are repaired first: the stdlib parser (our fallback) keeps lone surrogates.
    fields = {k: bounded(item[k]) if isinstance(item[k], str) else item[k]
              for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id") if k in item}
    for key in ("cat", "name", "ph"):
        if key in fields and fields[key] is None:
            del fields[key]
    for key in ("pid", "tid", "id"):      # ids wider than 64 bits (the stdlib parser keeps them) stay names
        value = fields.get(key)
        if type(value) is int and not -2**63 <= value < 2**63:
            fields[key] = str(value)
    try:
        event = msgspec.convert(fields, RawEvent, strict=False)
    except (msgspec.ValidationError, ValueError, TypeError, OverflowError):
        return None
    if isinstance(args, dict):
        event.args = LinkArgs(
            correlation=_int_or_none(args.get("correlation")),
            external_id=_int_or_none(args.get("External id")),
            external_id_lc=_int_or_none(args.get("external id")),
            name=bounded(args["name"]) if isinstance(args.get("name"), str) else None,
        )
    return event


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63 else None


def event_args(raw: Raw) -> dict[str, Any]:
    """One event's full args, decoded now; never raises (a broken args value reads as empty)."""
    if not raw:
        return {}
    data = bytes(memoryview(raw))
    try:
        value = orjson.loads(data)
        # orjson refuses lone surrogates, so only nesting can need bounding, and nesting deeper than
        # MAX_NESTING needs more than MAX_NESTING opening brackets: most args skip the walk.
        if data.count(b"{") + data.count(b"[") <= MAX_NESTING:
            return value if isinstance(value, dict) else {}
    except orjson.JSONDecodeError:
        try:
            value = orjson.loads(bytes(raw).decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            return {}
    return bounded(value) if isinstance(value, dict) else {}
