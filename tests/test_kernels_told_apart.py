"""Kernels whose raw names decode to one short name are told apart on every surface by the words of their
raw names that differ: `summary` (text and Markdown, both kernel tables and the findings), and the kernels
view `K`, also at 80 columns. The real traces that showed it: the B200 serving trace's two TensorRT-LLM
attention kernels (`…PagedKv` and `…PagedKvSlidingOrChunked…`), and the V100 ResNet-50's
`implicit_convolve_sgemm` kernels, which differ by template arguments. Raw names and counts are read here
with json + gzip only."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from app_support import wait_for_screen
from conftest import ROOT

from mlptui.app import make_app
from mlptui.cli import main
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.profile_tables import KernelStatsTable

REAL = ROOT.parent / "shared" / "corpus" / "real"
B200 = REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
V100 = REAL / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
TRTLLM = "TensorRT-LLM attention fwd fp8e4m3"
CONV = "cuDNN conv implicit GEMM (implicit_convolve_sgemm) f32"


def _kernels(path: Path) -> Counter[str]:
    if not path.exists():
        pytest.skip("corpus not available")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"))


def _summary(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["summary", *args]) == 0
    return capsys.readouterr().out


def _section(out: str, title: str) -> list[str]:
    return out.split(f"\n{title}", 1)[1].split("\n\n", 1)[0].splitlines()[3:]


def test_the_trtllm_pair_is_told_apart_in_summary_and_said_once_in_the_findings(
        capsys: pytest.CaptureFixture[str]) -> None:
    raw = {name: n for name, n in _kernels(B200).items() if name.startswith("fmhaSm100")}
    assert len(raw) == 2
    sliding = next(name for name in raw if "SlidingOrChunked" in name)
    other = next(name for name in raw if name != sliding)
    out = _summary(capsys, str(B200))
    for title in ("kernels (", "kernels, completed"):
        rows = [r for r in _section(out, title) if TRTLLM in r]
        assert len(rows) == 2, title
        assert sum(f"{TRTLLM} ‹SlidingOrChunked› " in r for r in rows) == 1
        assert sum(f"{TRTLLM} ‹·› " in r for r in rows) == 1
        assert all(f" {raw[sliding]} " in r for r in rows if "Sliding" in r)
    findings = out.split("\nfindings\n", 1)[1].split("\n\n", 1)[0].splitlines()
    fused = [line for line in findings if line.strip().startswith("fused attention:")]
    assert [line.rsplit(": ", 1)[1] for line in fused] == [f"{TRTLLM} ‹SlidingOrChunked›", f"{TRTLLM} ‹·›"]
    assert all(f": {raw[sliding]} kernels " in line or f": {raw[other]} kernels " in line for line in fused)
    launch = [line for line in findings if "attention launch" in line]
    occupancy = [line for line in findings if "attention occupancy" in line]
    assert len(launch) == len(occupancy) == 1 and "(both kernels above)" in launch[0]
    assert len(findings) == len(set(findings))                 # one thing said once


def test_the_v100_convolutions_are_told_apart_by_their_template_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    raw = [name for name in _kernels(V100) if "implicit_convolve_sgemm<" in name]
    assert len(raw) >= 2
    for out in (_summary(capsys, str(V100)), _summary(capsys, "--md", str(V100))):
        names = [re.split(r"\s{2,}| \| ", line.strip(" |"))[0] for line in out.splitlines() if CONV in line]
        kernel_rows = [n for n in names if n.startswith(CONV)]
        assert kernel_rows and all(n.startswith(f"{CONV} ‹") for n in kernel_rows)
        assert "(variant" not in out
        # each label's words are the template arguments of one raw name, in its order
        args = {tuple(re.findall(r"\d+", name.split("<", 1)[1].split(">", 1)[0])) for name in raw}
        for n in set(kernel_rows):
            own = tuple(n.split("‹", 1)[1].rstrip("›").split())
            assert any(_subsequence(own, a) for a in args), n
    table = [r for r in _section(_summary(capsys, str(V100)), "kernels (") if r.strip().startswith(CONV)]
    assert len({re.split(r"\s{2,}", r.strip())[0] for r in table}) == len(table)


def _subsequence(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    it = iter(whole)
    return all(word in it for word in part)


async def test_the_kernels_view_at_80_columns_keeps_the_words_that_differ() -> None:
    raw = _kernels(B200)
    app = make_app([str(B200)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("K")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = screen.query_one(KernelStatsTable)
        shown = []
        for index, row in enumerate(table.rows):
            if "SlidingOrChunked" in row.name or row.name.startswith("fmhaSm100"):
                assert row.calls == raw[row.name]
                table.move_cursor(index)
                await pilot.pause()
                screen_row = index - round(table.scroll_offset.y) + 1        # below the header
                shown.append(table.render_line(screen_row).text.split("  ")[0].strip())
        assert len(shown) == 2 and len(set(shown)) == 2
        assert any(s.endswith("‹SlidingOrChunked›") for s in shown) and any(s.endswith("‹·›") for s in shown)
