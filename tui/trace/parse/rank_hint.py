"""A trace file's rank before it is loaded: from `distributedInfo` near the top of the file (Kineto
writes it in the header, before the events), or else from the file name (`rank-3`, `worker3`).
Cheap enough to run on every file of a folder to tell whether the folder is one multi-rank run."""

from __future__ import annotations

import re
from pathlib import Path

from mlptui.contract.errors import TraceError
from mlptui.contract.regular_file import open_regular
from mlptui.trace.analysis.ranks import RankInfo, in_rank_order, rank_from_name
from mlptui.trace.parse.gzip_input import inflate_head, is_gzip

_HEAD_BYTES = 1 << 16
_INFO = re.compile(rb'"distributedInfo"\s*:\s*\{(?P<body>[^{}]*)')
_FIELD = {name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*(\d+)') for name in ("rank", "world_size")}
_BACKEND = re.compile(rb'"backend"\s*:\s*"([^"]*)"')


def _head(path: Path) -> bytes:
    f, _ = open_regular(path)
    with f:
        head = f.read(_HEAD_BYTES)
    if is_gzip(head):
        return inflate_head(head, 4 * _HEAD_BYTES) or b""
    return head


def rank_hint(path: str | Path) -> RankInfo:
    p = Path(path)
    try:
        head = _head(p)
    except (OSError, TraceError):
        head = b""
    m = _INFO.search(head)
    if m:
        body = m.group("body")
        found = {k: rx.search(body) for k, rx in _FIELD.items()}
        backend = _BACKEND.search(body)
        if found["rank"]:
            world = found["world_size"]
            return RankInfo(int(found["rank"].group(1)), int(world.group(1)) if world else None,
                            backend.group(1).decode("utf-8", "replace") if backend else None)
    return RankInfo(rank_from_name(p.name), None, None)


def rank_files(paths: list[Path]) -> list[tuple[int, Path]] | None:
    """The files in rank order when they look like the ranks of one run, else None."""
    return in_rank_order([rank_hint(p) for p in paths], paths)
