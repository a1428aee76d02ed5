"""What the private copy of a mapped index-cache entry costs: a cached open of one trace, the entry mapped
from a private copy (what mlptui does), mapped from the entry itself (what it did: a change to the entry
after the open could crash the process), and read into memory (what entries under the mapping threshold
get). Each open is load_trace in this process, after one open that indexes the trace and writes its entry
in a fresh, private cache folder.

    python /work/shared/tools/gen_kineto_trace.py /tmp/t100.json --mb 100
    python benchmarks/bench_cache_map.py /tmp/t100.json [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import BinaryIO


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench-cache-")
    from mlptui.trace.parse import index_cache
    from mlptui.trace.parse.load import load_trace

    start = time.perf_counter()
    load_trace(args.trace)
    print(f"first open (index, write the entry): {time.perf_counter() - start:.2f} s")
    print(f"entry: {index_cache.entry_path(args.trace).stat().st_size / 1e6:.1f} MB")
    copy = index_cache.private_copy

    def same_file(f: BinaryIO, folder: Path) -> BinaryIO:       # the entry itself, as before the copy
        return os.fdopen(os.dup(f.fileno()), "rb")

    for label, mapped, copier in (("mapped from a private copy", True, copy),
                                  ("mapped from the entry itself", True, same_file),
                                  ("read into memory", False, copy)):
        index_cache.map_above = (lambda: 0) if mapped else (lambda: 1 << 62)
        index_cache.private_copy = copier
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            load_trace(args.trace)
            times.append(time.perf_counter() - start)
        print(f"{label}: median {statistics.median(times) * 1e3:.0f} ms "
              f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}, {args.runs} runs)")


if __name__ == "__main__":
    main()
