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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
from msgspec import Raw, Struct

from mlptui.base.errors import TraceError
from mlptui.trace.parse.limits import MAX_NESTING, bounded

_NO_ARGS = Raw(b"")


class LinkArgs(Struct, gc=False):
    """The args keys read during the load: linking ids (old traces spell one in lower case), the `name`
    of process/thread metadata events, and a kernel's launch keys as written (checked when made into
    columns: mlptui.trace.parse.launch), so that no view reads the file again for them."""

    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    external_id_lc: int | None = msgspec.field(default=None, name="external id")
    name: str | None = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy_pct: Any = msgspec.field(default=None, name="est. achieved occupancy %")


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
    n_events: int = 0                             # events decoded (`events` may be emptied or never filled)
    classified: Any = None                        # the events as read piece by piece while decoded
                                                  # (mlptui.trace.parse.classify.Classifier), if so


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
        except (UnicodeDecodeError, _BadUtf8):
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


# msgspec up to 0.22 raised UnicodeDecodeError on invalid UTF-8; from 0.23 it raises DecodeError with this
# message. Both mean the same damage, which decode_document repairs.
_INVALID_UTF8 = "Invalid UTF-8"


class _BadUtf8(Exception):
    """The document holds invalid UTF-8 (whichever way the installed msgspec says so)."""


def _decode_any(data: Any, first: int, source: str) -> Decoded:
    try:
        return _decode_fast(data, first)
    except msgspec.ValidationError:
        return _decode_tolerant(data, source)
    except msgspec.DecodeError as exc:
        if _INVALID_UTF8 in str(exc):
            raise _BadUtf8 from None
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
        decoded.meta["file_truncated"] = {"how": "json", "bytes": len(data)}
        decoded.warnings.insert(0, f"the file ends early (truncated after {len(data)} bytes); "
                                   f"loaded the {len(decoded.events)} events before the cut")
        return decoded
    return None


# A big trace's event array is decoded in pieces of about this many bytes: only one piece's decoded events
# are alive at a time (mlptui.trace.parse.classify.Classifier keeps what the index needs of them as columns).
PIECE_BYTES = 4 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_AFTER_EVENT = re.compile(rb"\}[ \t\r\n]*,(?=[ \t\r\n]*\{)")     # an object's end, then the next one's start
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_ARRAY_END = re.compile(rb"[ \t\r\n]*\]")
_TRIES = 4


class NoPieces(Exception):
    """The event array cannot be cut here: decode the document whole instead."""


def decode_in_pieces(data: bytes | bytearray | memoryview, sink: Callable[[list[RawEvent]], None]) -> Decoded | None:
    """Decode a trace of at least two pieces piece by piece, handing each piece's events to `sink` in order;
    None (and `sink`'s batches to be thrown away) when it is small, or anything about it needs the whole-
    document path (a byte order mark, a value of an unexpected type, bad UTF-8, a truncated file, ...).

    A piece ends after an event's closing brace followed by a comma and the next opening brace. Such a spot
    may lie inside a string or a nested object, but then '[' + piece + ']' is not valid JSON: a piece that decodes ends exactly
    between two events of the array. What is around the array is decoded with the array emptied, which
    also checks that the "traceEvents" found is the document's own key."""
    n = len(data)
    found = array_start(data) if n >= 2 * PIECE_BYTES else None
    if found is None:
        return None
    start, bare = found
    count = 0
    scratch = bytearray()
    try:
        pos = start
        while True:
            piece = _next_piece(data, pos, min(pos + PIECE_BYTES, n), scratch)
            if piece is None:
                break
            events, pos = piece
            count += len(events)
            sink(events)
            del events
        events, end = last_piece(data, pos, scratch)
        count += len(events)
        sink(events)
        del events
    except (NoPieces, msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return None
    meta = meta_around(memoryview(data)[:start], memoryview(data)[end:], bare)
    return None if meta is None else Decoded(events=[], meta=meta, n_events=count)


def array_start(data: bytes | bytearray | memoryview) -> tuple[int, bool] | None:
    """(the offset just after the event array's '[', whether the document is a bare array), for cutting the
    array into pieces; None where the document does not open as a trace does (a byte order mark, too)."""
    if data[:3] == b"\xef\xbb\xbf":
        return None
    at = _first_at(data)
    if at is None:
        return None
    if data[at] == ord("["):
        return at + 1, True
    found = _EVENTS_KEY.search(data, at)
    if data[at] != ord("{") or found is None:
        return None
    return found.end(), False


def meta_around(before: bytes | memoryview, after: bytes | memoryview, bare: bool) -> dict[str, Any] | None:
    """The meta of what surrounds an event array decoded in pieces (`before` ends with its '[', `after`
    starts after its ']'), decoded with the array emptied, which also checks that the "traceEvents" found
    is the document's own key; None where the pieces cannot stand for the document."""
    if bare:
        return None if _CONTENT.search(after) is not None else {"bare_array": True}
    try:
        doc = _DOC.decode(bytes(before) + b"]" + bytes(after))
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return None
    return _meta_of(doc) if doc.traceEvents == [] else None


def _next_piece(data: Any, pos: int, target: int, scratch: bytearray) -> tuple[list[RawEvent], int] | None:
    """(the events from `pos` to the first event end after `target`, where the next piece starts); None when
    no event end that decodes follows (the array's last piece is next)."""
    for _ in range(_TRIES):
        cut = _AFTER_EVENT.search(data, target)
        if cut is None:
            return None
        try:
            return _decode_piece(data, pos, cut.start() + 1, scratch), cut.end()
        except msgspec.DecodeError:
            target = cut.end()
    return None


def last_piece(data: Any, pos: int, scratch: bytearray) -> tuple[list[RawEvent], int]:
    """(the events from `pos` to the end of the array, the offset just after its closing bracket). The
    decoder, given the rest of the document as an array, says where the array ends ("trailing
    characters (byte N)": the byte after the first one past the array); the piece up to there is then
    decoded, and only an array that decodes there is taken."""
    if _ARRAY_END.match(data, pos):        # an empty array, or one that ends here
        raise NoPieces
    try:
        return _decode_piece(data, pos, len(data), scratch, closed=True), len(data)
    except msgspec.DecodeError as exc:
        found = _TRAILING.search(str(exc))
        if found is None:
            raise NoPieces from None
        end = pos - 2 + int(found.group(1))          # the first trailing character (N counts it)
        while end > pos and data[end - 1] in b" \t\r\n":
            end -= 1
        if data[end - 1] != ord("]"):
            raise NoPieces from None
    try:
        return _decode_piece(data, pos, end, scratch, closed=True), end
    except msgspec.DecodeError:
        raise NoPieces from None


def _decode_piece(data: Any, start: int, end: int, scratch: bytearray, closed: bool = False) -> list[RawEvent]:
    """The events of data[start:end] (whole events, comma separated; with `closed`, up to and with the
    array's closing bracket): decoded in place, with the byte before (and after) turned into brackets
    for the call, where the buffer is writable (a file read into memory); else from a copy in `scratch`."""
    view = memoryview(data)
    tail = 0 if closed else 1
    if view.readonly or start < 1 or end + tail > len(view):
        size = end - start + 1 + tail
        if len(scratch) < size:        # one buffer for every piece: a new one each time costs page faults
            scratch.extend(bytes(size - len(scratch)))
        scratch[0] = ord("[")
        scratch[1:end - start + 1] = view[start:end]
        if not closed:
            scratch[size - 1] = ord("]")
        with memoryview(scratch) as piece:
            copied: list[RawEvent] = _ARRAY.decode(piece[:size])
        return copied
    before = view[start - 1]
    after = view[end] if not closed else 0
    view[start - 1] = ord("[")
    if not closed:
        view[end] = ord("]")
    try:
        events: list[RawEvent] = _ARRAY.decode(view[start - 1:end + tail])
    finally:
        view[start - 1] = before
        if not closed:
            view[end] = after
    return events


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
            grid=args.get("grid"), block=args.get("block"), registers=args.get("registers per thread"),
            shared_memory=args.get("shared memory"), blocks_per_sm=args.get("blocks per SM"),
            occupancy_pct=args.get("est. achieved occupancy %"),
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
