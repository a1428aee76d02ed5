"""Results an agent can afford: JSON text within a character cap, tables a page at a time.

A table page is `{"rows": [...], "next": cursor or null, "cut": bool, "total": n}`: at most `limit`
rows from the cursor, fewer when the cap is reached first (`cut` true, and `cut_note` says so); `next`
is the cursor of the first row not sent (null after the last). Any other document that does not fit has
its longest lists shortened until it does, with `cut` and `cut_note` saying which."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from mlptui.base.errors import MlptuiError
from mlptui.commands.output import dumps_json

MAX_CHARS = 20_000
DEFAULT_LIMIT = 50
_ROOM = 400          # characters kept for the page's own keys and the note
_LEFT_OUT = "… (cut)"


def dumps(doc: Any) -> str:
    """Compact JSON (an agent pays for every character); what orjson cannot write, as the CLI writes it."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return dumps_json(doc).rstrip("\n")


def _offset(cursor: str | None, total: int) -> int:
    if cursor in (None, ""):
        return 0
    try:
        at = int(str(cursor))
    except ValueError:
        raise MlptuiError(f"not a cursor: {cursor!r} (pass the `next` of the previous page)") from None
    if not 0 <= at <= total:
        raise MlptuiError(f"cursor {at} is outside the table's {total} rows")
    return at


def page(rows: list[Any], limit: int | None, cursor: str | None, max_chars: int = MAX_CHARS,
         extra: dict[str, Any] | None = None) -> str:
    """One page of `rows` as JSON text of at most `max_chars` characters, with `extra` keys beside it."""
    if limit is not None and limit < 1:
        raise MlptuiError(f"limit must be 1 or more, not {limit}")
    want = DEFAULT_LIMIT if limit is None else limit
    start = _offset(cursor, len(rows))
    head = dict(extra or {})
    budget = max_chars - len(dumps(head)) - _ROOM
    if budget <= 0:
        raise MlptuiError(f"the result's own figures need more than {max_chars} characters")
    sent: list[Any] = []
    used = 0
    cut = False
    for row in rows[start:start + want]:
        size = len(dumps(row)) + 1          # and the comma between rows
        if used + size > budget:
            cut = True
            break
        sent.append(row)
        used += size
    if cut and not sent:                    # one row over the cap: sent shortened, never skipped
        sent.append(_shorten(rows[start], budget))
    end = start + len(sent)
    doc: dict[str, Any] = {**head, "rows": sent, "next": str(end) if end < len(rows) else None, "cut": cut,
                           "total": len(rows)}
    if cut:
        doc["cut_note"] = (f"cut at {max_chars} characters after {len(sent)} row(s): ask again with "
                           f"cursor={doc['next']} for the rest" if doc["next"] else
                           f"the last row was shortened to fit {max_chars} characters")
    return dumps(doc)


def _shorten(value: Any, budget: int) -> Any:
    """`value` with its strings and lists cut until its JSON fits `budget` characters."""
    value = copy.deepcopy(value)
    keep = max(budget // 4, 16)
    while len(dumps(value)) > budget and keep > 8:
        value = _cut(value, keep)
        keep //= 2
    return value


def _cut(value: Any, keep: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= keep else value[:keep] + "…"
    if isinstance(value, list):
        return [_cut(v, keep) for v in value[:max(keep // 16, 1)]]
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    return value


def fit(doc: dict[str, Any], max_chars: int = MAX_CHARS) -> str:
    """`doc` as JSON text; when longer than `max_chars`, its longest lists halved (then long strings cut)
    until it fits, with `cut` true and `cut_note` naming what was shortened."""
    text = dumps(doc)
    if len(text) <= max_chars:
        return text
    doc = copy.deepcopy(doc)
    shortened: list[str] = []
    while len(dumps(doc)) > max_chars - _ROOM:
        found = _longest_list(doc, "")
        if found is None or len(found[1]) <= 1:
            doc = _shorten(doc, max_chars - _ROOM)
            shortened.append("long strings")
            break
        where, items = found
        del items[max(len(items) // 2, 1):]
        if where not in shortened:
            shortened.append(where)
    while len(dumps(doc)) > max_chars - _ROOM:       # still too long: the largest values left out whole
        sizes = {k: len(dumps(v)) for k, v in doc.items() if v != _LEFT_OUT}
        if not sizes:
            break
        key = max(sizes, key=lambda k: sizes[k])
        doc[key] = _LEFT_OUT
        shortened.append(f"{key} (left out)")
    named = ", ".join(shortened[:4]) + (f" and {len(shortened) - 4} more" if len(shortened) > 4 else "")
    doc["cut"] = True
    doc["cut_note"] = (f"cut to fit {max_chars} characters: shortened {named}; the table tools "
                       f"(operators, kernels, steps, dispatch, timeline) page their rows in full")
    text = dumps(doc)
    if len(text) > max_chars:      # only names too long to shorten: say so rather than overflow
        text = dumps({"cut": True, "cut_note": f"the result does not fit {max_chars} characters"})
    return text


def _longest_list(value: Any, where: str) -> tuple[str, list[Any]] | None:
    """The list (anywhere in `value`) whose JSON is longest, with its key path."""
    best: tuple[int, str, list[Any]] | None = None
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, list):
            size = len(dumps(v))
            if len(v) > 1 and (best is None or size > best[0]):
                best = (size, path or "the list", v)
            stack.extend((f"{path}[]", x) for x in v)
        elif isinstance(v, dict):
            stack.extend((f"{path}.{k}" if path else str(k), x) for k, x in v.items())
    return None if best is None else (best[1], best[2])
