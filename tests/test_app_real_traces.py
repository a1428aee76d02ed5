"""The explorer on traces other people recorded (../shared/corpus/real): a `with_stack` trace's dispatch
pane in its step scope, and the findings of a GPU-only AMD trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from app_support import rows_text, wait_for_screen
from conftest import ROOT
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.op_tree import OpTree

REAL = ROOT.parent / "shared" / "corpus" / "real"
BERT = REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
MI210 = REAL / "AMD-AGI__TraceLens__mi210_gpu_only_trace_gpu_only_trace.json.gz"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="real-trace corpus not available")
SIZE = (120, 36)


async def test_with_stack_dispatch_pane_shows_the_step_by_overlap() -> None:
    app = make_app([str(BERT)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        trace = screen.facts.trace
        assert screen.scope.step == 0 and trace.steps[0].name == "ProfilerStep#6"
        step = trace.steps[0]
        tree = screen.query_one(OpTree)
        rows = rows_text(tree)
        assert rows, "the step's dispatch tree is empty"
        names = [r.split(" | ")[0].strip(" ▾▸") for r in rows]
        # Python frames that start before the step and end after it hold it: the step is inside them
        first = trace.ops[tree.ids[0]]
        assert first.cat == "python_function" and first.ts < step.ts and first.end > step.ts + step.dur
        assert "ProfilerStep#6" in names
        current = trace.ops[tree.current_op()]          # the cursor waits on the step's first op
        assert current.cat == "cpu_op" and step.ts <= current.ts < step.ts + step.dur
        # every row overlaps the step, and every child sits inside its parent
        for node in tree.ids:
            op = trace.ops[node]
            assert op.ts < step.ts + step.dur and op.end > step.ts
            if op.parent >= 0:
                parent = trace.ops[op.parent]
                assert parent.ts <= op.ts + 1e-3 and op.end <= parent.end + 1e-3
        # GPU time rolls up only into real ancestors: no slice claims more than the GPU ran in the trace
        assert max(trace.ops[n].gpu_us for n in tree.ids) <= sum(g.dur for g in trace.gpu) + 1e-3
        await pilot.press("e")
        assert any(r.split(" | ")[0].strip(" ▾▸") == "aten::linear" for r in rows_text(tree))


async def test_gpu_only_trace_findings_agree_with_the_launch_table(tmp_path: Path) -> None:
    shutil.copy(MI210, tmp_path / MI210.name)
    app = make_app([str(tmp_path)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        for _ in range(200):
            if app.facts_cache:
                break
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        text = str(screen.query_one("#picker-findings", Static).render())
        assert "no launch calls recorded" not in text
        assert "hipExtModuleLaunchKernel ×339" in text and "hipLaunchKernel ×223" in text
        assert "gfx90a" in text and "sm90" not in text and "sm_90" not in text
        assert "no CPU ops recorded" in text
