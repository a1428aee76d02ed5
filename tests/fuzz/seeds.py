"""Seed inputs for the trace fuzzer: small slices of real traces (the bundled samples and the shared
corpus), so that mutation starts from every shape a real trace has instead of from nothing.

    python tests/fuzz/seeds.py OUT_DIR     # writes a few hundred small seeds (.json, some gzipped)
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "sample_traces", ROOT.parent / "shared" / "corpus"]
MAX_SOURCE_BYTES = 60 << 20      # skip the few huge corpus files: slicing them costs more than it gives
SLICES_PER_TRACE = 6
EVENTS_PER_SLICE = 40


def _read(path: Path) -> object | None:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _slices(doc: object) -> list[object]:
    """A few windows of consecutive events (with the document's top-level keys), plus one window per
    category so that kernels, launches and annotations all appear in some seed."""
    if isinstance(doc, list):
        events, top = doc, None
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events, top = doc["traceEvents"], {k: v for k, v in doc.items() if k != "traceEvents"}
    else:
        return [doc]
    windows: list[list[object]] = []
    step = max(1, len(events) // SLICES_PER_TRACE)
    for start in range(0, len(events), step)[:SLICES_PER_TRACE]:
        windows.append(events[start:start + EVENTS_PER_SLICE])
    by_cat: dict[str, list[object]] = {}
    for e in events:
        if isinstance(e, dict):
            bucket = by_cat.setdefault(str(e.get("cat")), [])
            if len(bucket) < 8:
                bucket.append(e)
    windows.append([e for bucket in by_cat.values() for e in bucket])
    return [w if top is None else {**top, "traceEvents": w} for w in windows]


def write_seeds(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for folder in SOURCES:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.json*")):
            if path.name == "manifest.json" or path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            doc = _read(path)
            if doc is None:
                continue
            for i, piece in enumerate(_slices(doc)):
                data = json.dumps(piece, separators=(",", ":")).encode()
                (out / f"{path.name.split('.')[0][:60]}-{i}.json").write_bytes(data)
                n += 1
    return n


if __name__ == "__main__":
    print(write_seeds(Path(sys.argv[1])), "seeds")
