"""HTA's critical-path analysis on its own critical-path test traces, written down for tests/test_critical_path_hta.py.

Runs only in a throwaway environment that has HolisticTraceAnalysis (never the project's .venv):

    python3 -m venv /tmp/hta-venv
    /tmp/hta-venv/bin/pip install HolisticTraceAnalysis 'pandas<3'
    /tmp/hta-venv/bin/python benchmarks/hta_critical_path.py [--corpus ../shared/corpus/hta] \
        [--out benchmarks/results/hta_critical_path]

HTA 0.5.0 fails on pandas 3 (`DataFrame.drop(axis=1, columns=...)`), hence the pin. Neither trace has a
ProfilerStep, so mlptui's path covers the whole trace; HTA is run over the same window: `annotation=""`
(its whole-trace mode; `instance_id` is then unused). Each trace gets one JSON file (never overwritten):
the command, the versions, HTA's time origin and window (µs from it), the path's length (the sum of its edge weights), its edges in
path order (type, weight, the instants they join) and the events those instants belong to, and the path's
device work (kernels, copies, sets) in order.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ("critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
          "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz")
ANNOTATION, INSTANCE = "", None          # HTA's whole-trace mode: the window mlptui uses without steps


def _run(trace: Path) -> dict[str, object]:
    from hta.analyzers.critical_path_analysis import CPEdgeType
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:         # HTA reads a folder of rank traces
        os.symlink(trace.resolve(), Path(d) / trace.name)
        analysis = TraceAnalysis(trace_dir=d)
        got = analysis.critical_path_analysis(rank=0, annotation=ANNOTATION, instance_id=INSTANCE)
    if got is None or not got[1]:
        raise SystemExit(f"{trace.name}: HTA's critical-path analysis failed")
    g = got[0]
    df = g.trace_df
    sym = g.sym_table
    events: dict[int, int] = {}          # trace-frame index -> position in `rows`
    rows: list[dict[str, object]] = []

    def event(ev: int) -> int:
        if ev not in events:
            r = df.loc[ev]
            stream = int(r["stream"])
            rows.append({"name": sym[int(r["name"])], "cat": sym[int(r["cat"])], "ts": int(r["ts"]),
                         "dur": int(r["dur"]), "tid": int(r["tid"]), "stream": stream,
                         "correlation": int(r["correlation"])})
            events[ev] = len(rows) - 1
        return events[ev]

    edges = []
    nodes = g.critical_path_nodes
    for u, v in zip(nodes[:-1], nodes[1:], strict=True):
        e = g.edges[u, v]["object"]
        a, b = g.node_list[u], g.node_list[v]
        owner = g.get_event_attribution_for_edge(e)          # the event HTA charges the edge to, if any
        edges.append({"type": CPEdgeType(e.type).name, "weight": int(g.edges[u, v]["weight"]),
                      "from": [event(int(a.ev_idx)), "start" if a.is_start else "end", int(a.ts)],
                      "to": [event(int(b.ev_idx)), "start" if b.is_start else "end", int(b.ts)],
                      "event": None if owner is None or owner < 0 else event(int(owner))})
    device = []
    for n in nodes:
        node = g.node_list[n]
        r = rows[events[int(node.ev_idx)]]
        if node.is_start and int(r["stream"]) >= 0:
            device.append({k: r[k] for k in ("name", "ts", "dur", "stream", "correlation")})
    return {
        "trace": trace.name,
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "versions": {p: version(p) for p in ("HolisticTraceAnalysis", "pandas", "numpy", "networkx")},
        "annotation": ANNOTATION, "instance_id": INSTANCE,
        "origin_ts": int(analysis.t.min_ts),         # the trace's ts that HTA's times count from
        "window": [int(df["ts"].min()), int((df["ts"] + df["dur"]).max())],
        "length_us": sum(int(e["weight"]) for e in edges),
        "device": device,
        "edges": edges,
        "events": rows,
    }


def _dump(record: dict[str, object]) -> str:
    """JSON with one list item per line: diffable, and small enough to commit."""
    lines = []
    for key, value in record.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = ",\n  ".join(json.dumps(v, ensure_ascii=False) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {items}\n ]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n " + ",\n ".join(lines) + "\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "hta")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "hta_critical_path")
    args = ap.parse_args()
    try:
        import hta  # noqa: F401
    except ImportError:
        raise SystemExit("needs HolisticTraceAnalysis: run it with the interpreter of a venv that has it") from None
    args.out.mkdir(parents=True, exist_ok=True)
    for name in TRACES:
        trace = args.corpus / name
        if not trace.exists():
            raise SystemExit(f"{trace}: not found")
        out = args.out / (name.removesuffix(".json.gz") + ".hta.json")
        if out.exists():
            raise SystemExit(f"{out}: already there (remove it to write it again)")
        record = _run(trace)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(_dump(record))
        tmp.replace(out)
        print(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: length {record['length_us']} µs, "
              f"{len(record['device'])} device ops, {len(record['edges'])} edges")


if __name__ == "__main__":
    main()
