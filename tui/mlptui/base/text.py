"""Text that is safe to print on a terminal, whatever a trace or a remote host put in it.

Names come from files (kernel names, op names, file names, remote listings, ssh's stderr): a control
character in one of them would reach the terminal raw (an escape sequence can recolour, retitle or
rewrite the screen) and a newline would forge a line of output. `printable` spells every such
character as a visible escape (`\\x1b`, `\\n`, `\\ud800` for a lone surrogate, which no terminal
encoding can carry); JSON output is never passed through it (JSON escapes exactly by itself).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

# C0 controls, DEL, C1 controls (U+009B is a one-byte CSI), lone surrogates, and the bidirectional
# overrides/isolates that reorder what a line seems to say.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
MAX_DEPTH = 64


def _spell(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control, lone-surrogate or bidi-override character written as an escape."""
    return _UNSAFE.sub(_spell, text)


def printable_tree(value: Any, _depth: int = 0) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings, numbers) with `printable` applied to every
    string, keys included; containers nested deeper than MAX_DEPTH become the string "…"."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        if _depth >= MAX_DEPTH:
            return "…"
        return {printable(k) if isinstance(k, str) else k: printable_tree(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if _depth >= MAX_DEPTH:
            return "…"
        return [printable_tree(v, _depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A typed report: the same dataclass with its fields made printable (its depth is the JSON's).
        return dataclasses.replace(value, **{f.name: printable_tree(getattr(value, f.name), _depth + 1)
                                             for f in dataclasses.fields(value) if f.init})
    return value


_BEFORE_BRACKET = re.compile(r"(\\*)\[")
_TRAILING_BACKSLASHES = re.compile(r"(\\+)$")


def markup_escape(text: str) -> str:
    """`printable(text)` made literal inside Rich or Textual markup: every `[` is escaped (Rich's own
    escape leaves `[2J` or a lone `[` alone, and Textual then reads up to the next `]` as a tag and
    fails on the closing tag after it), and backslashes are doubled where they would escape one."""
    text = _BEFORE_BRACKET.sub(lambda m: m.group(1) * 2 + "\\[", printable(text))
    m = _TRAILING_BACKSLASHES.search(text)
    return text + m.group(1) if m else text
