"""The picker at 80×24: the list keeps the kernels, the mix and occ.q, the findings open with every figure
of the selected row in full (the columns a narrow list drops or cuts), `space` pages the findings and
comes back to the top, `z` zooms them and keeps the selected row on screen."""

from __future__ import annotations

import gzip
import json

from app_support import rows_text, screen_lines, wait_for_screen
from conftest import find_sample
from textual.containers import VerticalScroll
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen, TraceList
from mlptui.viewmodels.fmt import us

SIZE = (80, 24)
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def _last_step(path) -> dict[str, float]:
    """The last ProfilerStep of a trace, read from its raw events: its duration, the kernels its launch
    calls made (by correlation) and the union of the device work they made."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    step = max((e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")),
               key=lambda e: int(e["name"].split("#")[1]))
    device: dict[int, list[dict]] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" in e.get("args", {}):
            device.setdefault(e["args"]["correlation"], []).append(e)
    made = [g for e in events if e.get("cat") in LAUNCH_CATS and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
            for g in device.get(e.get("args", {}).get("correlation"), [])]
    busy, end = 0.0, float("-inf")
    for a, b in sorted((g["ts"], g["ts"] + g["dur"]) for g in made):
        if b > end:
            busy += b - max(a, end)
            end = b
    return {"cpu_us": step["dur"], "gpu_busy_us": busy, "kernels": sum(g["cat"] == "kernel" for g in made)}


def _findings(screen) -> list[str]:
    return str(screen.query_one("#picker-findings", Static).render()).splitlines()


def _screen(app) -> str:
    return "\n".join(screen_lines(app))


async def test_the_findings_give_each_row_s_figures_in_full_at_80_columns() -> None:
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = screen.query_one(TraceList)
        header = _screen(app).splitlines()[2].split()
        assert header == ["#", "trace", "kernels", "the", "step's", "kernels", "occ.q"]
        traces = len(table.specs) - len(screen.folders)        # the folder rows below them have no figures
        for index, row in enumerate(rows_text(table)[:traces]):
            await pilot.press(str(index + 1))
            await pilot.pause()
            _, _, kernels, mix, launches, ops, busy, cpu, occ, _, _ = row.split(" | ")
            line = _findings(screen)[1]
            assert line.startswith(f"{kernels} kernel{'' if kernels == '1' else 's'}: {mix} · {launches} launch")
            assert f" · {ops} CPU op" in line and f" · GPU busy {busy} · CPU {cpu} · {occ} occupancy quer" in line
            assert " ".join(line.split()) in " ".join(_screen(app).split())     # whole on screen, wrapped
        await pilot.press("4")
        await pilot.pause()
        raw = _last_step(find_sample("mlp", "eager", "bf16"))
        assert _findings(screen)[1].startswith(f"{raw['kernels']} kernels: 3 GEMM + mul + gelu · ")
        assert f"GPU busy {us(raw['gpu_busy_us'])} · CPU {us(raw['cpu_us'])} · " in _findings(screen)[1]


async def test_space_pages_the_findings_and_comes_back_to_the_top() -> None:
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.press("4")
        await pilot.pause()
        pane = screen.query_one("#picker-findings-pane", VerticalScroll)
        assert pane.max_scroll_y > 0 and "CPU: 30 ops" not in _screen(app)     # below the pane at 80×24
        seen = []
        for _ in range(10):
            await pilot.press("space")
            await pilot.pause()
            seen.append(pane.scroll_y)
            if pane.scroll_y == pane.max_scroll_y:
                break
        assert seen[-1] == pane.max_scroll_y and "CPU: 30 ops" in _screen(app)
        assert "space More findings" in _screen(app).splitlines()[-1]
        await pilot.press("space")                       # after the last page: the top again
        await pilot.pause()
        assert pane.scroll_y == 0
        await pilot.press("space", "5")                  # another row starts at its top
        await pilot.pause()
        assert pane.scroll_y == 0 and "mlp · compile" in _findings(screen)[0]


async def test_z_zooms_the_findings_and_j_still_picks() -> None:
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        pane = screen.query_one("#picker-findings-pane", VerticalScroll)
        tall = pane.size.height
        await pilot.press("7", "z")
        await pilot.pause()
        assert pane.size.height > tall + 6
        lines = _screen(app).splitlines()
        assert lines[3].startswith("> 7 mlp · train")                     # the selected row stays
        await pilot.press("j")
        await pilot.pause()
        assert _screen(app).splitlines()[3].startswith("> 8 kernels-mlp") and "kernels-mlp" in _findings(screen)[0]
        await pilot.press("z")
        await pilot.pause()
        assert pane.size.height == tall


async def test_the_page_key_is_remapped_by_its_id(monkeypatch) -> None:
    monkeypatch.setenv("MLPTUI_KEYS", "findings-page=f")
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.press("4", "space")
        await pilot.pause()
        pane = screen.query_one("#picker-findings-pane", VerticalScroll)
        assert pane.scroll_y == 0 and "f More findings" in _screen(app).splitlines()[-1]
        await pilot.press("f")
        await pilot.pause()
        assert pane.scroll_y > 0
