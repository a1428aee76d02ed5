"""200 concurrent GETs against `mlptui perfetto`'s server, with socketserver's default listen backlog
(5) and with ours, side by side in one run.

    python benchmarks/bench_perfetto_load.py [--clients 200] [--kb 256] [--timeout 5]

Each client connects at the same instant (a barrier), GETs the one served file and reads it whole;
a client that gets no complete answer within --timeout seconds counts as failed. Prints successes,
latency percentiles and wall time for each backlog, and the ratio of the two p90s.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mlptui.commands.perfetto import Served, _Server


def _run(backlog: int, path: Path, clients: int, timeout: float) -> dict[str, float]:
    cls = type("BenchServer", (_Server,), {"request_queue_size": backlog})
    server = cls(0, {"/t.json": Served.of(path)})
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    port = server.server_address[1]
    size = path.stat().st_size
    barrier = threading.Barrier(clients)

    def one(_: int) -> float | None:
        barrier.wait()
        start = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            conn.request("GET", "/t.json")
            ok = len(conn.getresponse().read()) == size
            conn.close()
        except OSError:
            return None
        took = time.perf_counter() - start
        return took if ok and took <= timeout else None

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(one, range(clients)))
    wall = time.perf_counter() - start
    server.shutdown()
    server.server_close()
    done = sorted(r for r in results if r is not None)
    q = statistics.quantiles(done, n=10) if len(done) > 1 else [float("nan")] * 9
    worst = done[-1] if done else float("nan")
    return {"ok": len(done), "p50": q[4], "p90": q[8], "max": worst, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--kb", type=int, default=256, help="size of the served file")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        path.write_bytes(os.urandom(args.kb << 10))
        with contextlib.redirect_stdout(io.StringIO()):       # the server's "served ..." lines
            rows = {backlog: _run(backlog, path, args.clients, args.timeout)
                    for backlog in (5, _Server.request_queue_size)}
    print(f"{args.clients} concurrent GETs of {args.kb} KiB, {args.timeout:g} s timeout")
    for backlog, r in rows.items():
        print(f"  backlog {backlog:5d}: {r['ok']:4d}/{args.clients} ok   p50 {r['p50']:.3f} s   "
              f"p90 {r['p90']:.3f} s   max {r['max']:.3f} s   wall {r['wall']:.2f} s")
    old, new = rows[5], rows[_Server.request_queue_size]
    print(f"  p90 ratio (backlog 5 / ours): {old['p90'] / new['p90']:.1f}x; "
          f"failed: {args.clients - old['ok']} vs {args.clients - new['ok']}")


if __name__ == "__main__":
    main()
