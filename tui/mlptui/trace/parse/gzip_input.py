"""Gzip input, told apart from plain JSON by its magic bytes, never by the file name: reading a stream in
chunks (with progress), concatenated members, and a truncated stream kept as what it holds (a run killed
while writing). Shared by the loader, the lazy args reader and the folder sniffing."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from zlib import _Decompress

from mlptui.base.errors import TraceError
from mlptui.base.progress import Progress
from mlptui.trace.parse.limits import InflateBudget

GZIP_MAGIC = b"\x1f\x8b"
GZIP_CHUNK = 1 << 20      # compressed bytes per step: about 10 MB of JSON, so progress moves smoothly


class Readable(Protocol):
    def read(self, n: int, /) -> bytes: ...


def is_gzip(head: bytes) -> bool:
    return head[:2] == GZIP_MAGIC


def inflate_head(data: bytes, limit: int) -> bytes | None:
    """Up to `limit` decompressed bytes of the start of a gzip stream, or None when it is not gzip."""
    try:
        return zlib.decompressobj(wbits=31).decompress(data, limit)
    except zlib.error:
        return None


def read_gzip(f: Readable, total: int, source: str, progress: Progress | None) -> bytes:
    """All of the stream, within the inflate budget of a `total`-byte file (trace.parse.limits); no more
    than `total` compressed bytes are read (a file that grows while it is read is not followed)."""
    out: list[bytes] = []
    d = zlib.decompressobj(wbits=31)
    budget = InflateBudget(total, source)
    done = 0
    try:
        while done < total:
            chunk = f.read(min(GZIP_CHUNK, total - done))
            if not chunk:
                break
            done += len(chunk)
            out.append(_inflate(d, chunk, budget))
            while d.eof and d.unused_data:   # concatenated gzip members
                rest = d.unused_data
                d = zlib.decompressobj(wbits=31)
                out.append(_inflate(d, rest, budget))
            if progress is not None:
                progress(done, total)
    except zlib.error as exc:
        raise TraceError(f"{source}: corrupt gzip data near byte {done} ({exc})") from None
    data = b"".join(out)
    if not d.eof:
        # A run killed while writing: what decompressed may still hold most of the trace.
        if not data.strip():
            raise TraceError(f"{source}: truncated gzip file (stream ends early after {done} bytes)")
        return GzipTruncated(data)
    return data


class GzipTruncated(bytes):
    """Decompressed bytes of a gzip stream that ended early (the decoder then says so in a warning)."""


def _inflate(d: _Decompress, chunk: bytes, budget: InflateBudget) -> bytes:
    if d.eof and not d.unused_data:
        return b""   # trailing garbage after the last member is ignored, like gzip(1)
    # Never more than the budget allows in one call: a small chunk can inflate a thousandfold.
    return budget.add(d.decompress(chunk, budget.room()))


def gunzip_bytes(data: bytes, source: str, progress: Progress | None) -> bytes:
    class _Reader:
        def __init__(self) -> None:
            self.pos = 0

        def read(self, n: int) -> bytes:
            chunk = data[self.pos:self.pos + n]
            self.pos += len(chunk)
            return chunk

    return read_gzip(_Reader(), len(data), source, progress)
