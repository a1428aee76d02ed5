"""Kernel names a table or a findings line can tell apart: the decoded short name, and where several raw
names decode to the same short name, the raw name's own words that the others lack (`cuBLAS nvjet GEMM
128x160 NTT ‹4x1 v›` beside `… ‹2x4 h›`); labels still alike after that get `#1`, `#2` in raw-name order.

Words are runs of letters and digits. Where one word of a name is long and differs from the others' by a
part inside it (TensorRT-LLM's `fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausal…`
beside the same name without `SlidingOrChunked`), the words are split at their case and digit changes
too, so the label names the part that differs rather than a cut of the whole word.

    distinct_labels(raw_names, short_of=None) -> {raw: label}
    differing_words(names) -> [the words of each name that the others lack]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

from mlptui.trace.names.kernel import decode_kernel

TAIL_MAX = 28       # columns of the distinguishing words at most (cut in their middle beyond that)
_WORD = re.compile(r"[A-Za-z0-9]+")
_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# a token: its text, and whether it is glued to the token before it (a piece of the same word)
Token = tuple[str, bool]


def distinct_labels(raw_names: Iterable[str], short_of: Callable[[str], str] | None = None) -> dict[str, str]:
    """Each raw name's label: its short name (`short_of(raw)`, by default the decoded one), plus what
    tells it apart where the short name is shared with another raw name of `raw_names`."""
    by_short: dict[str, list[str]] = {}
    for raw in sorted(set(raw_names)):
        short = decode_kernel(raw).short if short_of is None else short_of(raw)
        by_short.setdefault(short, []).append(raw)
    labels: dict[str, str] = {}
    for short, raws in by_short.items():
        if len(raws) == 1:
            labels[raws[0]] = short
            continue
        named = [f"{short} ‹{part}›" for part in differing_words(raws)]
        seen = Counter(named)
        numbered: Counter[str] = Counter()
        for raw, label in zip(raws, named, strict=True):
            if seen[label] > 1:
                numbered[label] += 1
                label = f"{label} #{numbered[label]}"
            labels[raw] = label
    return labels


def _words(raw: str) -> list[Token]:
    return [(word, False) for word in _WORD.findall(raw)]


def _pieces(raw: str) -> list[Token]:
    out: list[Token] = []
    for word in _WORD.findall(raw):
        out += [(piece, k > 0) for k, piece in enumerate(_PIECE.findall(word))]
    return out


def differing_words(raws: list[str]) -> list[str]:
    """Per name, its words beyond those every name of the group has, in order (`·` for none); by the parts
    of words when a whole differing word would not fit. Any names: kernels, files, folders."""
    parts = _own(raws, _words)
    if any(len(part) > TAIL_MAX for part in parts):
        finer = _own(raws, _pieces)
        if sum(map(len, finer)) < sum(map(len, parts)):
            parts = finer
    return [_cut(part) for part in parts]


def _own(raws: list[str], split: Callable[[str], list[Token]]) -> list[str]:
    tokens = [split(raw) for raw in raws]
    common = Counter(text for text, _ in tokens[0])
    for other in tokens[1:]:
        common &= Counter(text for text, _ in other)
    parts = []
    for own in tokens:
        left = Counter(common)
        text, kept_last = "", False
        for word, glued in own:
            if left[word] > 0:
                left[word] -= 1
                kept_last = False
                continue
            text += word if glued and kept_last else (" " if text else "") + word
            kept_last = True
        parts.append(text or "·")
    return parts


def _cut(text: str) -> str:
    if len(text) <= TAIL_MAX:
        return text
    half = (TAIL_MAX - 1) // 2
    return text[:half] + "…" + text[-half:]
