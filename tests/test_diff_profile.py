"""The diff's profiler part: the operator table of the aligned steps side by side and both sides'
overview, in `diff --json`, the text report and the diff screen (`o`)."""

from __future__ import annotations

from app_support import rows_text, wait_for_screen
from conftest import find_sample
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.render.diff_text import render_text
from mlptui.screens.diff_profile_screen import DiffProfileScreen
from mlptui.screens.diff_screen import DiffScreen
from mlptui.trace.analysis.operators.operators import operators
from mlptui.trace.diff.trace_diff import diff_traces
from mlptui.trace.parse.load import load_trace
from mlptui.widgets.profile_tables import OperatorDiffTable


def eager_compile():
    return load_trace(find_sample("mlp", "eager")), load_trace(find_sample("mlp", "compile"))


def test_diff_json_has_operators_side_by_side_and_both_overviews() -> None:
    a, b = eager_compile()
    d = diff_traces(a, b)
    doc = d.report()
    assert doc.operators is not None and doc.overview is not None
    rows = {r.name: r for r in doc.operators}
    assert rows["aten::mm"].status == "same" and rows["aten::mm"].a.calls == 3
    assert rows["aten::linear"].status == "removed" and rows["aten::linear"].b is None
    assert rows["TorchDynamo Cache Lookup"].status == "added"
    # the same numbers as the operator view of each aligned step
    mm_a = next(g for g in operators(a, d.a.step_index) if g.name == "aten::mm")
    assert rows["aten::mm"].a.device_total_us == round(mm_a.device_total_us, 3)
    for ov in (doc.overview.a, doc.overview.b):
        assert 0 < ov.gpu_util <= 1 and ov.tensor_core_share > 0.5
        assert sum(ov.breakdown_us.values()) == pytest_approx(ov.duration_us)
    swapped = d.swapped().report()
    assert {r.name: r.status for r in swapped.operators or []}["aten::linear"] == "added"
    text = render_text(doc)
    assert "Operators of the aligned steps" in text and "- aten::linear" in text


def pytest_approx(x: float):
    import pytest

    return pytest.approx(x, abs=1e-6)


async def test_o_on_the_diff_screen_shows_the_operator_table() -> None:
    app = make_app([str(find_sample("mlp", "eager")), str(find_sample("mlp", "compile"))])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_screen(app, pilot, DiffScreen)
        await pilot.press("o")
        screen = await wait_for_screen(app, pilot, DiffProfileScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        header = str(screen.query_one("#diff-profile-header", Static).render())
        assert header.startswith("A: all 3 steps") and "\nB: " in header and "GPU util" in header
        rows = rows_text(screen.query_one(OperatorDiffTable))
        assert any(r.startswith("- | aten::linear") for r in rows)
        assert any(r.startswith("= | aten::mm") for r in rows)
        await pilot.press("escape")
        assert isinstance(app.screen, DiffScreen)
