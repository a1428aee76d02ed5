"""One source of truth on real traces: each MCP tool's result (the tool functions called in-process, not
over stdio) equals the Python API's and `mlptui summary --json`'s figures, and the kernel counts equal
the raw events'."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS

import mlptui
from mlptui.cli import main
from mlptui.commands.output import dumps_json

pytest.importorskip("mcp", reason="the `mcp` extra is not installed")

from mlptui.api.mcp_server import build  # noqa: E402
from mlptui.api.session import Traces  # noqa: E402

REAL = CORPUS.parent / "real"
TRACES = [REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz",            # with_stack, no ProfilerStep
          REAL / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz",  # MI300X, 2 streams
          REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz",
          REAL / "facebookresearch__param__dlrm_kineto_worker0_step_12.1694128201545.pt.trace.json.gz",
          CORPUS / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"]


def _json(value: Any) -> Any:
    return json.loads(dumps_json(value))


def _raw_kernels(path: Path) -> int:
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")


async def _call(server: Any, tool: str, **args: Any) -> Any:
    result = await server.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def _all_rows(server: Any, tool: str, **args: Any) -> list[Any]:
    rows: list[Any] = []
    cursor = None
    while True:
        page = await _call(server, tool, limit=1000, **({"cursor": cursor} if cursor else {}), **args)
        rows += page["rows"]
        cursor = page["next"]
        if cursor is None:
            return rows


@pytest.mark.parametrize("path", [p for p in TRACES if p.exists()], ids=lambda p: p.name[:40])
def test_mcp_tools_equal_the_api_and_summary_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["summary", str(path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    t = mlptui.load(path)
    assert _json(t.summary()) == cli
    assert sum(k["count"] for k in cli["kernels"]) == _raw_kernels(path)

    async def tools() -> None:
        server = build(Traces(), max_chars=1_000_000)       # no cut: whole results to compare
        opened = await _call(server, "open_trace", path=str(path))
        assert opened["counts"] == cli["counts"] and opened["steps"] == [s["name"] for s in cli["steps"]]
        assert opened["device_arch"] == cli["device_arch"]
        tid = opened["id"]
        summary = await _call(server, "summary", id=tid)
        assert (summary["total"], summary["steps"], summary["findings"]) == (cli["total"], cli["steps"],
                                                                              cli["findings"])
        assert await _all_rows(server, "steps", id=tid) == cli["steps"] == _json(t.steps().rows)
        assert await _all_rows(server, "operators", id=tid) == cli["operators"] == _json(t.operators().rows)
        assert await _all_rows(server, "kernels", id=tid) == cli["kernel_stats"] == _json(t.kernels().rows)
        overview = await _call(server, "overview", id=tid)
        assert (overview["rows"], overview["total"]) == (cli["overview"]["steps"], cli["overview"]["total"])
        findings = await _call(server, "findings", id=tid)
        assert findings["lines"] == cli["findings"] and findings["recommendations"] == cli["recommendations"]
        assert findings["attention"] == cli["attention"]

    asyncio.run(tools())
