"""`mlptui mcp` driven over real stdio by the MCP SDK's own client: the tools and their schemas, every tool
on bundled traces, pages that add up to the whole table and to the raw events, bounded results, and tool
errors of one line after which the server keeps answering."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ROOT, SAMPLES, find_sample, training_sample

import mlptui.api as api

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

TOOLS = {"open_trace", "summary", "steps", "overview", "operators", "kernels", "memory", "modules", "dispatch",
         "timeline", "diff", "check", "ranks", "findings"}
CAP = 20_000


def _plain(value: Any) -> Any:
    """Typed rows as the one encoder writes them."""
    return orjson.loads(orjson.dumps(value))
RUN_DIR = sorted(p for p in SAMPLES.glob("tp-mlp-eager-*-x2-*") if p.is_dir())[-1]
B200 = ROOT.parent / "shared" / "corpus" / "real" / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"


@asynccontextmanager
async def server(*args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mlptui.cli", "mcp", *args])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text
    assert not result.is_error, text
    assert len(text) <= CAP
    return json.loads(text)


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


async def test_tools_paging_and_dispatch_against_raw_events() -> None:
    linear = find_sample("linear", "eager", "bf16")
    events = _events(linear)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    async with server() as s:
        listed = (await s.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        assert all(t.input_schema.get("type") == "object" for t in listed)
        by_name = {t.name: t for t in listed}
        assert {"id", "limit", "cursor", "sort", "filter", "step"} <= set(by_name["operators"].input_schema["properties"])

        both = await asyncio.gather(call(s, "open_trace", path=str(linear)), call(s, "open_trace", path=str(linear)))
        assert both[0] == both[1]           # two questions at once: one load, one id
        opened = both[0]
        tid = opened["id"]
        assert opened["counts"]["gpu_ops"] == len(kernels)
        assert opened["steps"] == [e["name"] for e in sorted(events, key=lambda e: e.get("ts", 0))
                                   if e.get("name", "").startswith("ProfilerStep#")]

        rows, cursor, pages = [], None, 0
        while True:
            page = await call(s, "operators", id=tid, limit=2, **({"cursor": cursor} if cursor else {}))
            rows += page["rows"]
            pages += 1
            assert len(page["rows"]) <= 2 and not page["cut"]
            cursor = page["next"]
            if cursor is None:
                break
        assert len(rows) == page["total"] and pages == -(-page["total"] // 2)
        assert len({r["name"] for r in rows}) == len(rows)
        assert rows == _plain(api.load(str(linear)).operators().rows)
        # every kernel of this trace runs under aten::addmm inside a step: device self time adds up to them
        assert sum(r["device_self_us"] for r in rows) == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)

        k = await call(s, "kernels", id=tid)
        assert sum(r["calls"] for r in k["rows"]) == len(kernels)

        d = await call(s, "dispatch", id=tid, op_or_path="aten::linear")
        names = {r["name"]: r for r in d["rows"]}
        assert d["rows"][0]["name"] == "aten::linear"
        assert names["aten::t"]["depth"] == names["aten::addmm"]["depth"] == 1
        assert names["aten::addmm"]["gpu_kernels"] == sorted({e["name"] for e in kernels})


async def test_every_tool_answers_within_the_cap() -> None:
    train = training_sample()
    async with server() as s:
        a = (await call(s, "open_trace", path=train))["id"]
        b = (await call(s, "open_trace", path=str(find_sample("mlp", "eager"))))["id"]
        assert (await call(s, "open_trace", path=train))["id"] == a        # the same trace, the same id
        summary = await call(s, "summary", id=a)
        assert summary["counts"]["steps"] == len(summary["steps"])
        number = int(summary["steps"][-1]["name"].rpartition("#")[2])
        assert (await call(s, "summary", id=a, step=number))["total"] == summary["steps"][-1]
        assert len((await call(s, "steps", id=a))["rows"]) == summary["counts"]["steps"]
        assert (await call(s, "overview", id=a))["scope"] == "steps"
        assert (await call(s, "operators", id=a, step=number, sort="host_total_us"))["rows"]
        assert (await call(s, "kernels", id=a, filter="gemm"))["total"] >= 0
        assert (await call(s, "memory", id=a))["available"] is True
        assert (await call(s, "modules", id=a))["available"] is True
        assert (await call(s, "findings", id=a))["lines"]
        assert (await call(s, "diff", a=b, b=a))["rows"]
        assert (await call(s, "check", id=a, expectations=["no memcpy"]))["rows"][0]["expectation"] == "no memcpy"
        assert len((await call(s, "ranks", run_dir=str(RUN_DIR)))["sources"]) == 2
        window = await call(s, "timeline", id=a, start_us=0, end_us=1e12, limit=100_000)
        assert window["cut"] is True and window["next"] is not None and str(CAP) in window["cut_note"]
        rest = await call(s, "timeline", id=a, start_us=0, end_us=1e12, limit=5, cursor=window["next"])
        assert rest["rows"] and rest["total"] == window["total"]


async def test_errors_are_one_line_and_the_server_goes_on(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.pt.trace.json"
    outside.write_bytes(gzip.decompress(find_sample("linear", "eager", "bf16").read_bytes()))
    async with server("--root", str(SAMPLES), "--max-chars", "2000", "--keep", "1") as s:
        assert "no such file" in await error(s, "open_trace", path=str(SAMPLES / "none.json"))
        assert "outside" in await error(s, "open_trace", path=str(outside))
        assert "--root" in await error(s, "open_trace", path="host:/data/x.json")
        assert "no trace with id" in await error(s, "summary", id="t9")
        assert "outside" in await error(s, "ranks", run_dir=str(tmp_path))
        tid = (await call(s, "open_trace", path=training_sample()))["id"]
        other = await call(s, "open_trace", path=str(find_sample("linear", "eager", "bf16").relative_to(SAMPLES)))
        assert other["id"] != tid           # a path relative to --root; with --keep 1 it pushed the first out
        assert "ProfilerStep#999" in await error(s, "operators", id=tid, step=999)
        assert "limit must be 1 or more" in await error(s, "operators", id=tid, limit=0)
        result = await s.call_tool("summary", {"id": tid})
        assert not result.is_error
        text = result.content[0].text
        doc = json.loads(text)
        assert len(text) <= 2000 and doc["cut"] is True and "2000 characters" in doc["cut_note"]


def test_without_the_extra_one_line_names_it() -> None:
    code = "import sys; sys.modules['mcp'] = None; from mlptui.cli import main; sys.exit(main(['mcp']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "pip install '.[mcp]'" in done.stderr


async def test_a_with_stack_corpus_trace_stays_within_the_cap() -> None:
    """The B200 serving step (with_stack, 24,656 events, no ProfilerStep): every tool's answer fits, and
    the figures are the API's."""
    if not B200.is_file():
        pytest.skip(f"corpus trace not found at {B200}")
    handle = api.load(str(B200))
    events = _events(B200)
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    async with server() as s:
        tid = (await call(s, "open_trace", path=str(B200)))["id"]
        summary = await call(s, "summary", id=tid)
        assert summary["total"] == _plain(handle.summary().total) and summary["total"]["kernels"] == kernels
        await call(s, "steps", id=tid)
        await call(s, "overview", id=tid)
        ops = await call(s, "operators", id=tid, sort="device_total_us", limit=1000)
        assert ops["rows"] == _plain(handle.operators(sort="device_total_us").rows[:len(ops["rows"])])
        k = await call(s, "kernels", id=tid, limit=1000)
        if k["next"] is None:
            assert sum(r["calls"] for r in k["rows"]) == kernels
        assert (await call(s, "memory", id=tid))["available"] is False
        mods = await call(s, "modules", id=tid, limit=1000)
        assert mods["available"] is True and mods["total"] == len(handle.modules().rows)
        top = ops["rows"][0]["name"]
        await call(s, "dispatch", id=tid, op_or_path=top, limit=1000)
        await call(s, "timeline", id=tid, start_us=0, end_us=1e12, limit=100_000)
        await call(s, "findings", id=tid)
        await call(s, "check", id=tid, expectations=["no memcpy"])
        await call(s, "diff", a=tid, b=tid, limit=1000)
