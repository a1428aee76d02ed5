"""Kernel names a table can tell apart: the decoded short name, and where several raw names decode to the
same short name, the raw name's own words that the others lack (`cuBLAS nvjet GEMM 128x160 NTT ‹4x1 v›`
beside `… ‹2x4 h›`); labels still alike after that get `#1`, `#2` in raw-name order."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from mlptui.trace.analysis.kernel_inputs import kernel_name
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel

TAIL_MAX = 28       # columns of the distinguishing words at most (cut in their middle beyond that)
_WORD = re.compile(r"[A-Za-z0-9]+")


def distinct_labels(raw_names: Iterable[str], trace: Trace | None = None) -> dict[str, str]:
    """Each raw name's label: its short name (with the dtype the launching ops' inputs give, where the
    name is ambiguous and `trace` is given), plus what tells it apart where the short name is shared
    with another raw name of `raw_names`."""
    by_short: dict[str, list[str]] = {}
    for raw in sorted(set(raw_names)):
        short = (decode_kernel(raw) if trace is None else kernel_name(trace, raw)).short
        by_short.setdefault(short, []).append(raw)
    labels: dict[str, str] = {}
    for short, raws in by_short.items():
        if len(raws) == 1:
            labels[raws[0]] = short
            continue
        named = [f"{short} ‹{part}›" for part in _differing(raws)]
        seen = Counter(named)
        numbered: Counter[str] = Counter()
        for raw, label in zip(raws, named, strict=True):
            if seen[label] > 1:
                numbered[label] += 1
                label = f"{label} #{numbered[label]}"
            labels[raw] = label
    return labels


def every_kernel_labels(trace: Trace) -> dict[str, str]:
    """The labels of all the trace's GPU ops together (the all-steps scope); through `Trace.derive`, so a
    worker can make them before the scope is first shown."""
    return distinct_labels({g.name for g in trace.gpu}, trace)


def _differing(raws: list[str]) -> list[str]:
    """Per name, its words (letters and digits) beyond those every name of the group has, in order."""
    words = [_WORD.findall(raw) for raw in raws]
    common = Counter(words[0])
    for other in words[1:]:
        common &= Counter(other)
    parts = []
    for own in words:
        left = Counter(common)
        extra = []
        for word in own:
            if left[word] > 0:
                left[word] -= 1
            else:
                extra.append(word)
        text = " ".join(extra) or "·"
        if len(text) > TAIL_MAX:
            half = (TAIL_MAX - 1) // 2
            text = text[:half] + "…" + text[-half:]
        parts.append(text)
    return parts
