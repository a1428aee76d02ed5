"""How the headless commands write reports: JSON exact for any input, text and Markdown terminal-safe.

`dumps_json(doc)` is orjson's output for every ordinary document; what orjson cannot write (a lone
surrogate, an integer wider than 64 bits, nesting beyond 255 levels) falls back to the stdlib writer
with ASCII escapes, which spells any such value exactly. `safe_doc(doc)` escapes control characters
in every string of a document before it is rendered as text or Markdown (base.text.printable).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

import orjson

from mlptui.base.text import MAX_DEPTH, printable, printable_tree


def json_bytes(doc: Any) -> bytes:
    """The document as UTF-8 JSON, indented, with its closing newline. Keys that are not strings (written as
    their str) are rare and the option that allows them slows every document (benchmarks/results/critical_path),
    so it is asked for only when orjson refuses without it."""
    for keys in (0, orjson.OPT_NON_STR_KEYS):
        try:
            return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE | keys)
        except (TypeError, orjson.JSONEncodeError):
            continue
    return (json.dumps(_plain(doc), indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode()


def dumps_json(doc: Any) -> str:
    return json_bytes(doc).decode()


def write_json(doc: Any) -> None:
    """The document to standard output as bytes: a report of hundreds of MB is not turned into a str and
    back (a str of non-ASCII text takes two or four bytes a character)."""
    data = json_bytes(doc)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:           # a stream without bytes under it (a test's StringIO)
        sys.stdout.write(data.decode())
        return
    sys.stdout.flush()           # what was written as text goes first
    buffer.write(data)
    buffer.flush()


def _plain(value: Any, depth: int = 0) -> Any:
    """What orjson would write for NaN and infinities (null), and a depth bound for the stdlib writer."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        if depth >= 4 * MAX_DEPTH:
            return "…"
        return {k if isinstance(k, str) else str(k): _plain(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a typed report: its fields in order, as orjson writes them
        return _plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, depth)
    if isinstance(value, (list, tuple)):
        if depth >= 4 * MAX_DEPTH:
            return "…"
        return [_plain(v, depth + 1) for v in value]
    if hasattr(value, "__dataclass_fields__") or not isinstance(value, (str, int, float, bool, type(None))):
        return str(value)
    return value


def safe_doc(doc: Any) -> Any:
    """`doc` with every string terminal-safe, for the text and Markdown renderings."""
    return printable_tree(doc)


def safe_lines(lines: list[str]) -> str:
    """Names, one per line, terminal-safe (a newline in a name cannot forge another line)."""
    return "\n".join(printable(line) for line in lines)
