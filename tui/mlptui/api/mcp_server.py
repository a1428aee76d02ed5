"""`mlptui mcp`: the Model Context Protocol server over stdio (docs/agents.md). Each tool is a method
of the Python API (mlptui.api) with its result bounded by mlptui.api.bounds: JSON text, tables a page
at a time. A failure is a tool error carrying the command line's one-line reason, never a traceback."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Annotated, Any

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from mlptui.api import bounds
from mlptui.api.handle import Trace
from mlptui.api.runs import check as check_trace
from mlptui.api.runs import diff as diff_traces
from mlptui.api.runs import load_run as run_ranks
from mlptui.api.session import Traces
from mlptui.base.errors import MlptuiError

INSTRUCTIONS = (
    "mlptui reads PyTorch profiler (Kineto) traces. Call open_trace with a trace file, host:path or hf:// "
    "spec to get an id, then ask summary, steps, overview, operators, kernels, memory, modules, dispatch, "
    "timeline or findings about it; diff compares two, check tests expectations, ranks reports a folder of "
    "rank traces. Times are microseconds. Tables come a page at a time: pass `next` back as cursor."
)

TraceId = Annotated[str, Field(description="the id open_trace returned")]
Step = Annotated[int | None, Field(description="N of ProfilerStep#N; omitted: every step together")]
Limit = Annotated[int | None, Field(description=f"rows per page, 1 or more (default {bounds.DEFAULT_LIMIT})")]
Cursor = Annotated[str | None, Field(description="`next` of the previous page; omitted: the first page")]
Sort = Annotated[str | None, Field(description="a column: figures largest first, names A to Z; '-' reverses")]
Filter = Annotated[str | None, Field(description="keep rows whose name holds this text (any case)")]


# The diff's sections left out of its headline: its kernels are the result's rows, the rest are long tables.
_DIFF_TABLES = ("kernels", "operators", "launch_calls", "by_family", "biggest", "cpu", "overview")

# The SDK runs each call of a plain function in a worker thread, and a client may send several at once: one
# at a time, so two questions about a new trace load it once (the figures are CPU-bound either way).
_ONE_AT_A_TIME = threading.Lock()


def _answer(work: Callable[[], str]) -> str:
    """The tool's text, or a tool error with one line: the reason mlptui gives on its command line."""
    try:
        with _ONE_AT_A_TIME:
            return work()
    except MlptuiError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:     # as the command line does: one line, the server goes on
        raise ToolError(str(MlptuiError(f"internal error: {type(exc).__name__}: {exc}"))) from None


def _plain(value: Any) -> Any:
    """A result as plain JSON values (typed reports as their JSON), so that bounds can shorten any part."""
    return orjson.loads(bounds.dumps(value))


def summary_doc(t: Trace, step: int | None) -> dict[str, Any]:
    """The headline of `summary --json` over every step, or over one step (`total` is then that step's)."""
    r = t.summary()
    total = t.step(step)
    return {"source": r.source, "device": r.device, "device_arch": r.device_arch, "counts": r.counts,
            "scope": t.scope(step), "total": total, "steps": r.steps if step is None else [total],
            "findings": r.findings, "warnings": r.warnings, "verdict_rule": r.verdict_rule, "manifest": r.manifest}


def build(traces: Traces, max_chars: int = bounds.MAX_CHARS) -> MCPServer:
    server = MCPServer("mlptui", instructions=INSTRUCTIONS, version=version("mlptui"), log_level="WARNING")

    def fit(doc: Any) -> str:
        return bounds.fit(_plain(doc), max_chars)

    def table(rows: Sequence[Any], limit: int | None, cursor: str | None, **extra: Any) -> str:
        return bounds.page([_plain(r) for r in rows], limit, cursor, max_chars, _plain(extra))

    def handle(tid: str) -> Trace:
        return traces.get(tid)

    @server.tool(structured_output=False)
    def open_trace(path: Annotated[str, Field(description="a trace file (.json, .json.gz), host:path or hf://")]) -> str:
        """Open a trace; returns its id (for every other tool), device, steps, counts and what the loader skipped."""
        def work() -> str:
            tid, t = traces.open(path)
            s = t.summary()
            return fit({"id": tid, "source": s.source, "device": (s.device or {}).get("name"),
                        "device_arch": s.device_arch, "steps": [r.name for r in s.steps], "counts": s.counts,
                        "integrity": {"warnings": s.warnings, "unlinked_gpu_ops": s.counts.unlinked_gpu_ops}})
        return _answer(work)

    @server.tool(structured_output=False)
    def summary(id: TraceId, step: Step = None) -> str:
        """The headline figures: per-step CPU and GPU time, kernels, launches and verdict, and the findings."""
        return _answer(lambda: fit(summary_doc(handle(id), step)))

    @server.tool(structured_output=False)
    def steps(id: TraceId, limit: Limit = None, cursor: Cursor = None) -> str:
        """One row per ProfilerStep: CPU and GPU time, idle, kernels, launches, launch overhead, verdict."""
        return _answer(lambda: table(handle(id).steps().rows, limit, cursor))

    @server.tool(structured_output=False)
    def overview(id: TraceId, step: Step = None) -> str:
        """GPU utilisation, SM efficiency, occupancy, Tensor-Core share and the step-time breakdown."""
        return _answer(lambda: fit(handle(id).overview(step)))

    @server.tool(structured_output=False)
    def operators(id: TraceId, step: Step = None, sort: Sort = None, filter: Filter = None, limit: Limit = None,
                  cursor: Cursor = None) -> str:
        """CPU operators grouped by name: calls, host self/total µs, device self/total µs, Tensor-Core share."""
        return _answer(lambda: table(handle(id).operators(step, sort, filter).rows, limit, cursor))

    @server.tool(structured_output=False)
    def kernels(id: TraceId, step: Step = None, sort: Sort = None, filter: Filter = None, limit: Limit = None,
                cursor: Cursor = None) -> str:
        """GPU kernels grouped by name: calls, total/mean/min/max µs, Tensor Cores, blocks per SM, occupancy."""
        return _answer(lambda: table(handle(id).kernels(step, sort, filter).rows, limit, cursor))

    @server.tool(structured_output=False)
    def memory(id: TraceId, limit: Limit = None, cursor: Cursor = None) -> str:
        """Allocator figures (profile_memory traces): peaks per device, unfreed blocks, and per-op rows."""
        def work() -> str:
            m = handle(id).memory()
            return table(m.rows, limit, cursor, available=m.available, why=m.why, devices=m.devices,
                         unfreed=m.unfreed[:20])
        return _answer(work)

    @server.tool(structured_output=False)
    def modules(id: TraceId, filter: Filter = None, limit: Limit = None, cursor: Cursor = None) -> str:
        """The nn.Module tree (with_stack traces): calls, host µs and device µs per module path."""
        def work() -> str:
            m = handle(id).modules()
            rows = [r for r in m.rows if not filter or filter.lower() in " ".join(r.path).lower()]
            return table(rows, limit, cursor, available=m.available, why=m.why)
        return _answer(work)

    @server.tool(structured_output=False)
    def dispatch(id: TraceId,
                 op_or_path: Annotated[str, Field(description="an op name, or a path 'aten::linear → aten::t'")],
                 depth: Annotated[int | None, Field(description="levels kept below the op (0: the op only)")] = None,
                 limit: Limit = None, cursor: Cursor = None) -> str:
        """The CPU dispatch subtree below an op with the kernels each op launched and their GPU µs."""
        def work() -> str:
            d = handle(id).dispatch(op_or_path, depth)
            return table(d.rows, limit, cursor, op=d.op, contexts=d.contexts[:20])
        return _answer(work)

    @server.tool(structured_output=False)
    def timeline(id: TraceId, start_us: float, end_us: float,
                 lanes: Annotated[list[str] | None, Field(description="'cpu PID/TID', 'gpu DEVICE/STREAM', "
                                                                 "or 'cpu' / 'gpu' for all of a kind")] = None,
                 limit: Limit = None, cursor: Cursor = None) -> str:
        """The CPU slices and GPU ops in [start_us, end_us) (µs from the trace's first slice), by start."""
        def work() -> str:
            t = handle(id)
            return table(t.timeline(start_us, end_us, lanes).rows, limit, cursor, lanes=t.lanes())
        return _answer(work)

    @server.tool(structured_output=False)
    def diff(a: Annotated[str, Field(description="the reference trace's id")],
             b: Annotated[str, Field(description="the id of the trace compared with A")],
             step_a: Annotated[int | None, Field(description="N of A's ProfilerStep#N (default: median)")] = None,
             step_b: Annotated[int | None, Field(description="N of B's ProfilerStep#N (default: median)")] = None,
             limit: Limit = None, cursor: Cursor = None) -> str:
        """B against A on aligned steps: the headline speedups and the kernels row by row (paged)."""
        def work() -> str:
            d = diff_traces(handle(a), handle(b), step_a, step_b)
            head = {f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name not in _DIFF_TABLES}
            return table(d.kernels, limit, cursor, **head)
        return _answer(work)

    @server.tool(structured_output=False)
    def check(id: TraceId, expectations: Annotated[list[str], Field(
            description="e.g. 'kernels per step == 1', 'no memcpy', 'tensor cores: all GEMMs'")]) -> str:
        """Test expectations against the trace: whether each holds and what the trace shows."""
        def work() -> str:
            c = check_trace(handle(id), expectations)
            return fit({"ok": c.ok, "rows": [{"expectation": o.expectation, "ok": o.ok, "shows": o.shows}
                                             for o in c.rows]})
        return _answer(work)

    @server.tool(structured_output=False)
    def ranks(run_dir: Annotated[str, Field(description="a folder whose traces are the ranks of one run")]) -> str:
        """The report of a multi-rank run: per-rank step times, stragglers, collectives."""
        return _answer(lambda: fit(run_ranks(traces.allowed(run_dir))))

    @server.tool(structured_output=False)
    def findings(id: TraceId) -> str:
        """The last step at a glance, and the recommendations with the figures behind each."""
        return _answer(lambda: fit(handle(id).findings()))

    return server


def serve(root: str | None, keep: int, max_chars: int) -> None:
    build(Traces(root, keep), max_chars).run("stdio")
