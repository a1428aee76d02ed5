"""Which traces are the ranks of one job (`RankInfo`, `in_rank_order`; analysis.ranks reads the same
from a loaded trace), and a trace file's rank before it is loaded: from `distributedInfo` near the top
of the file (Kineto writes it in the header, before the events), or else from the file name (`rank-3`,
`worker3`). Cheap enough to run on every file of a folder to tell whether the folder is one run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mlptui.base.errors import TraceError
from mlptui.base.regular_file import open_regular
from mlptui.trace.parse.gzip_input import inflate_head, is_gzip

_NAME_RANK = re.compile(r"(?:^|[^a-z0-9])(?:rank[-_]?|worker)(\d+)(?![0-9])", re.IGNORECASE)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RankInfo:
    rank: int | None
    world_size: int | None
    backend: str | None


def rank_from_name(name: str) -> int | None:
    """`…rank-3…`, `rank_3`, `rank3`, `worker3` in the file name (not the folders above it)."""
    m = _NAME_RANK.search(name.replace("\\", "/").rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def run_problem(infos: Sequence[RankInfo], names: Sequence[str] | None = None) -> str | None:
    """Why these are not distinct ranks of one job (one line), or None when they are."""
    def name(i: int) -> str:
        return names[i].replace("\\", "/").rsplit("/", 1)[-1] if names else f"trace {i + 1}"

    if not infos:
        return "no traces"
    missing = [name(i) for i, info in enumerate(infos) if info.rank is None]
    if missing:
        return (f"{len(missing)} of {len(infos)} traces name no rank (no distributedInfo, no rank-N in the "
                f"file name): {', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}")
    seen: dict[int, int] = {}
    for i, info in enumerate(infos):
        assert info.rank is not None
        if info.rank in seen:
            return f"rank {info.rank} appears twice ({name(seen[info.rank])} and {name(i)})"
        seen[info.rank] = i
    worlds = sorted({i.world_size for i in infos if i.world_size is not None})
    if len(worlds) > 1:
        return f"the traces state different world sizes ({', '.join(map(str, worlds))})"
    if worlds and any(i.rank is not None and i.rank >= worlds[0] for i in infos):
        bad = next(i.rank for i in infos if i.rank is not None and i.rank >= worlds[0])
        return f"rank {bad} is outside the world size {worlds[0]} the traces state"
    if len(infos) < 2 and (infos[0].world_size or 0) <= 1:
        return "one trace of a one-rank job"
    return None


def is_rank_run(infos: Sequence[RankInfo]) -> bool:
    """True when these are distinct ranks of one job."""
    return run_problem(infos) is None


def in_rank_order(infos: Sequence[RankInfo], items: Sequence[T]) -> list[tuple[int, T]] | None:
    """`items` (one per info) as (rank, item) in rank order when the infos are one run, else None."""
    if not is_rank_run(infos):
        return None
    return sorted(((i.rank, x) for i, x in zip(infos, items, strict=True) if i.rank is not None),
                  key=lambda p: p[0])


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


def rank_files_or_why(paths: list[Path]) -> tuple[list[tuple[int, Path]] | None, str | None]:
    """(the files in rank order, None) when they are one run; (None, why not) when some name a rank but
    together they are not one run (a rank twice, different world sizes, files without a rank); (None,
    None) when none names a rank."""
    infos = [rank_hint(p) for p in paths]
    problem = run_problem(infos, [str(p) for p in paths])
    if problem is None:
        return in_rank_order(infos, paths), None
    if len(paths) < 2 or not any(i.rank is not None for i in infos):
        return None, None
    return None, problem
