"""The dispatch pane on traces recorded with Python stacks (../shared/corpus/real): every row on screen
shows its op's name at 160×48 and at 80×24 without zooming, the header holds the path above the cursor,
and `f` hides the Python frames while keeping every op, its place under its nearest op and its GPU time,
all checked against nesting and launch links recomputed here from the raw events."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import orjson
import pytest
from app_support import wait_for_screen
from conftest import ROOT

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.op_tree import OpTree

REAL = ROOT.parent / "shared" / "corpus" / "real"
BERT = REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
B200 = REAL / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="real-trace corpus not available")
READABLE = 12          # at least this much of each name (or all of a shorter one) is on screen
TREE_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function", "overhead"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def visible_rows(tree: OpTree) -> list[tuple[int, str]]:
    """(op id, rendered text) of every op row on screen, read from the lines the pane draws."""
    top = round(tree.scroll_offset.y)
    rows = []
    for y in range(1, tree.scrollable_content_region.height):
        index = top + y - 1
        if index < len(tree.ids) and tree.ids[index] >= 0:
            rows.append((tree.ids[index], tree.render_line(y).text))
    return rows


def assert_names_readable(tree: OpTree) -> None:
    ops = tree.trace.ops
    rows = visible_rows(tree)
    assert rows, "no op rows on screen"
    for op_id, text in rows:
        name = ops[op_id].name
        assert name[:READABLE] in text, f"{name!r} is not readable in {text!r}"


@pytest.mark.parametrize("path", [BERT, B200], ids=["bert-h100", "b200"])
@pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])
async def test_every_visible_row_shows_its_name(path: Path, size: tuple[int, int]) -> None:
    app = make_app([str(path)])
    async with app.run_test(size=size) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen, timeout=60)
        tree = screen.query_one(OpTree)
        assert screen.maximized is None
        assert_names_readable(tree)
        await pilot.press("home", "e")
        for _ in range(4):
            await pilot.press("pagedown")
            await pilot.pause()
            assert_names_readable(tree)
        # then the deepest row of the tree, and the pages around it
        deepest = max(range(len(tree.depths)), key=tree.depths.__getitem__)
        assert tree.depths[deepest] >= 12, "the trace has no deep rows to check"
        tree.move_cursor(deepest, center=True)
        for key in ("pageup", "pagedown", "pagedown"):
            await pilot.pause()
            assert_names_readable(tree)
            await pilot.press(key)
        # the header holds the path above the cursor, its nearest ancestor last
        ops = tree.trace.ops
        op = ops[tree.current_op()]
        if op.parent >= 0:
            assert tree.header_cells()[0].endswith(ops[op.parent].name[-8:] + " ›")
        # `L` slides the names: the cursor row's name cell starts eight columns further in
        before = tree.cells(tree.cursor)[0]
        await pilot.press("L")
        await pilot.pause()
        tree.render_line(1)
        after = tree.cells(tree.cursor)[0]
        assert (after[0] if isinstance(after, tuple) else after) == \
            (before[0] if isinstance(before, tuple) else before)[8:]


def raw_tree(path: Path) -> tuple[list[dict], dict[int, int], dict[int, float]]:
    """The raw CPU slices of the dispatch tree, each one's parent by true containment on its thread, and
    the GPU µs launched under each (via correlation to its launch call), all from the file itself."""
    events = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    cpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in TREE_CATS]
    parent: dict[int, int] = {}
    by_thread: dict[tuple, list[int]] = {}
    for i, e in enumerate(cpu):
        by_thread.setdefault((e["pid"], e["tid"]), []).append(i)
    for members in by_thread.values():
        members.sort(key=lambda i: (round(cpu[i]["ts"] * 1000), -round(cpu[i]["dur"] * 1000), i))
        open_: list[tuple[int, int]] = []        # (end, slice) of the slices begun and not yet ended
        for i in members:
            start, end = round(cpu[i]["ts"] * 1000), round((cpu[i]["ts"] + cpu[i]["dur"]) * 1000)
            open_ = [(e, j) for e, j in open_ if e > start]
            # the innermost container is the latest begun one that ends no earlier (frames may overlap
            # a step's edge without holding it)
            parent[i] = next((j for e, j in reversed(open_) if e >= end), -1)
            open_.append((end, i))
    launch_of = {e["args"]["correlation"]: i for i, e in enumerate(cpu)
                 if e["cat"] in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    gpu_us: dict[int, float] = Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            node = launch_of.get(e.get("args", {}).get("correlation"), -1)
            while node >= 0:
                gpu_us[node] += e["dur"]
                node = parent[node]
    return cpu, parent, gpu_us


@pytest.mark.parametrize("path", [BERT, B200], ids=["bert-h100", "b200"])
async def test_python_frames_key_keeps_every_op_and_its_gpu_time(path: Path) -> None:
    cpu, parent, gpu_us = raw_tree(path)
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen, timeout=60)
        await pilot.press("left_square_bracket")      # the whole trace: every step and what lies outside
        while screen.scope.step is not None:
            await pilot.press("left_square_bracket")
        tree = screen.query_one(OpTree)
        await pilot.press("f")
        await pilot.pause()
        assert tree.hide_python
        for index in range(len(tree.ids) - 1, -1, -1):      # open everything, last rows first
            tree._expand_all_from(index, tree._subtree_end(index), 10**6)
        trace = tree.trace
        ops = trace.ops
        origin = trace.origin_us
        shown = [n for n in tree.ids if n >= 0]
        assert not any(ops[n].cat == "python_function" for n in shown)
        # every op, annotation and launch call of the file has its row, once
        key = {(ops[n].name, round((ops[n].ts + origin) * 1000)): n for n in shown}
        want = Counter((e["name"], round(e["ts"] * 1000)) for e in cpu if e["cat"] != "python_function")
        assert Counter((ops[n].name, round((ops[n].ts + origin) * 1000)) for n in shown) == want
        # each row sits under its nearest ancestor that is no Python frame, and its GPU time is all the GPU
        # work launched beneath it in the file
        row_parent = {}
        stack: list[int] = []
        for n, depth in zip(tree.ids, tree.depths, strict=True):
            del stack[depth:]
            row_parent[n] = stack[-1] if stack and stack[-1] >= 0 else -1
            stack.append(n)
        for i, e in enumerate(cpu):
            if e["cat"] == "python_function":
                continue
            up = parent[i]
            while up >= 0 and cpu[up]["cat"] == "python_function":
                up = parent[up]
            n = key[(e["name"], round(e["ts"] * 1000))]
            expect = -1 if up < 0 else key[(cpu[up]["name"], round(cpu[up]["ts"] * 1000))]
            assert row_parent[n] == expect, e["name"]
            assert ops[n].gpu_us == pytest.approx(gpu_us.get(i, 0.0), abs=1e-3), e["name"]
        total_raw = sum(gpu_us.get(i, 0.0) for i, e in enumerate(cpu) if parent[i] < 0)
        assert sum(ops[n].gpu_us for n in shown if row_parent[n] < 0) == pytest.approx(total_raw, abs=1e-2)
        # and `f` again brings the frames back
        await pilot.press("f", "home", "e")
        await pilot.pause()
        assert not tree.hide_python
        assert any(ops[n].cat == "python_function" for n in tree.ids if n >= 0)
