"""The timeline as Perfetto's users expect it: a ruler in time since the trace's first event that moves with
every pan, names in slices wide enough to hold them, and an event cursor that walks a lane (`.` `,`) and
moves between lanes (`j` `k`) with the details pane following, the launch → kernel link in the caption.
Times and event order are read from the raw file."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import orjson
import pytest
from app_support import wait_for_screen
from conftest import ROOT, find_sample

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.timeline import Timeline

REAL = ROOT.parent / "shared" / "corpus" / "real"
BERT = REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
SLICE_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "kernel",
              "gpu_memcpy", "gpu_memset"}
UNITS = {"µs": 1.0, "ms": 1e3, "s": 1e6}


def raw_events(path: Path) -> list[dict]:
    return orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def ruler(timeline: Timeline) -> list[float]:
    """The ruler's tick labels, in µs."""
    return [float(n) * UNITS[u] for n, u in re.findall(r"\|(-?[\d.]+) ?(µs|ms|s)\b", timeline.render_line(0).text)]


@pytest.mark.parametrize("path", [BERT, None], ids=["bert-h100", "mlp-eager-h200"])
async def test_ruler_reads_time_since_the_first_event_and_moves_when_panning(path: Path | None) -> None:
    if path is None:
        path = find_sample("mlp", "eager", "bf16")
    elif not path.exists():
        pytest.skip("real-trace corpus not available")
    events = raw_events(path)
    first = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") in SLICE_CATS)
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        step = screen.facts.trace.steps[screen.scope.step]
        raw_step = next(e for e in events if e.get("name") == step.name and e.get("ph") == "X")
        step_start = raw_step["ts"] - first
        await pilot.press("5")
        timeline = screen.query_one(Timeline)
        ticks = ruler(timeline)
        assert len(ticks) >= 4
        step_us = ticks[1] - ticks[0]
        # round ticks, all inside the view, which opens on the step (2% of margin before it)
        assert all(t / step_us == pytest.approx(round(t / step_us), abs=1e-3) for t in ticks)
        assert step_start - 0.03 * timeline.span <= ticks[0] <= step_start + step_us
        assert ticks[-1] <= step_start + timeline.span
        await pilot.press("l", "l", "l")        # three pans of a quarter of the view each
        moved = ruler(timeline)
        assert moved != ticks
        assert moved[0] == pytest.approx(ticks[0] + 0.75 * timeline.span, abs=step_us * 1.01)


async def test_event_cursor_walks_a_lane_and_the_details_follow() -> None:
    path = find_sample("mlp", "eager", "bf16")
    events = raw_events(path)
    first = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") in SLICE_CATS)
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        trace = screen.facts.trace
        await pilot.press("5")
        timeline = screen.query_one(Timeline)
        details = screen.query_one(Details)
        # `.`: the first GPU op in view on the first stream, then the next ones, in the file's order
        await pilot.press("full_stop")
        await pilot.pause()
        kind, gid = screen.selected
        assert kind == "gpu"
        stream = trace.gpu[gid].stream
        on_stream = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")
                            and e["tid"] == stream), key=lambda e: e["ts"])
        view_start = timeline.start
        expected = [e for e in on_stream if e["ts"] - first >= view_start - 1e-3]
        walked = []
        for _ in range(4):
            kind, gid = screen.selected
            g = trace.gpu[gid]
            walked.append((g.name, round((g.ts + trace.origin_us) * 1000)))
            assert g.name in details.text                       # the details pane follows the cursor
            await pilot.press("full_stop")
            await pilot.pause()
        assert walked == [(e["name"], round(e["ts"] * 1000)) for e in expected[:4]]
        await pilot.press("comma")
        await pilot.pause()
        assert screen.selected[1] == gid                        # `,` steps back
        # the caption shows the launch → kernel link, with the call's name
        g = trace.gpu[gid]
        caption = timeline.render_line(timeline.scrollable_content_region.height - 1).text
        assert f"← {trace.ops[g.launch].name}" in caption
        # `k`: the lane above (the launch calls), at the same time
        await pilot.press("k")
        await pilot.pause()
        kind, op_id = screen.selected
        assert kind == "op" and trace.ops[op_id].cat in ("cuda_runtime", "cuda_driver")
        assert trace.ops[op_id].name in details.text
        # names in slices wide enough to hold them: the GEMM's short name on its stream's lane
        await pilot.press("plus", "plus")
        lines = [timeline.render_line(y).text for y in range(1, len(timeline.lanes) + 1)]
        assert any("nvjet" in line or "GEMM" in line for line in lines)


async def test_a_stream_sync_is_a_lane_under_its_stream_whose_event_is_the_call_that_waited(tmp_path: Path) -> None:
    """Kineto's Stream Sync row (tests/kineto_2026.py): drawn under its stream, not as a stream of its own;
    `j` from the stream's lane reaches it and the details show cudaStreamSynchronize."""
    import kineto_2026

    doc = kineto_2026.events()
    path = tmp_path / "sync.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    sync = next(e for e in doc["traceEvents"] if e.get("cat") == "cuda_sync")
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        trace = screen.facts.trace
        await pilot.press("5")
        timeline = screen.query_one(Timeline)
        labels = [lane.label for lane in timeline.lanes]
        gpu = labels.index(f"GPU0 s{sync['args']['stream']}")
        assert labels[gpu + 1] == "  syncs" and len([x for x in labels if x.startswith("GPU")]) == 1
        await pilot.press("full_stop")          # the first GPU op, on the stream's lane
        await pilot.press("j")                  # the lane below: the sync
        await pilot.pause()
        kind, op_id = screen.selected
        assert kind == "op" and trace.ops[op_id].name == "cudaStreamSynchronize"
        assert trace.ops[op_id].correlation == sync["args"]["correlation"]
        assert "cudaStreamSynchronize" in screen.query_one(Details).text


@pytest.mark.parametrize("width", [80, 160])
async def test_the_ruler_says_in_words_how_much_time_is_in_view(width: int) -> None:
    """The B200 serving trace has no steps: the view opens on the whole trace, 2% of margin each side. Its
    width closes the ruler as `90.91 ms in view`; as a bare first figure it read as a tick running backwards
    (`90.91 ms |0.00 µs |10.00 ms`)."""
    path = REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
    if not path.exists():
        pytest.skip("real-trace corpus not available")
    slices = [e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") in SLICE_CATS]
    whole = max(e["ts"] + e["dur"] for e in slices) - min(e["ts"] for e in slices)
    app = make_app([str(path)])
    async with app.run_test(size=(width, 30)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("5")
        await pilot.pause()
        line = screen.query_one(Timeline).render_line(0).text
        assert line.startswith("time ")
        assert line.rstrip().endswith(f"{whole * 1.04 / 1e3:.2f} ms in view")
        ticks = ruler(screen.query_one(Timeline))
        assert ticks[0] == 0 and ticks == sorted(ticks) and len(ticks) >= 2
        await pilot.press("plus")                   # zoom in: half the time in view
        await pilot.pause()
        assert screen.query_one(Timeline).render_line(0).text.rstrip().endswith(f"{whole * 0.52 / 1e3:.2f} ms in view")
