"""`g` walks from an op through every GPU op it launched, each after its launch call, and back: on Hopper
an `aten::mm` launches a memset before its GEMM, and the walk must reach the GEMM. The expected GPU ops
are found here from the raw events (launch calls inside the op's span on its thread, kernels by
correlation)."""

from __future__ import annotations

import gzip

import orjson
import pytest
from app_support import wait_for_screen
from conftest import ROOT, find_sample

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen
from mlptui.trace.model import LAUNCH_CATS
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.op_tree import OpTree

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def launched_by(events: list[dict], op: dict) -> list[tuple[str, int]]:
    """(name, ts in ns) of the GPU ops launched by calls inside `op`'s span on its thread, in launch order."""
    end = op["ts"] + op["dur"]
    calls = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
                    and e["tid"] == op["tid"] and e["pid"] == op["pid"] and op["ts"] <= e["ts"] and e["ts"] + e["dur"] <= end),
                   key=lambda e: e["ts"])
    gpu = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            gpu.setdefault(e["args"].get("correlation"), []).append(e)
    return [(g["name"], round(g["ts"] * 1000)) for c in calls for g in gpu.get(c["args"].get("correlation"), [])]


async def test_g_from_a_hopper_mm_reaches_its_gemm_and_comes_back() -> None:
    path = find_sample("mlp", "eager", "bf16")
    events = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        tree = screen.query_one(OpTree)
        trace = tree.trace
        mm = next(i for i, n in enumerate(tree.ids) if n >= 0 and trace.ops[n].name == "aten::mm")
        tree.move_cursor(mm)
        await pilot.pause()
        op = trace.ops[tree.ids[mm]]
        raw_op = next(e for e in events if e.get("name") == "aten::mm" and e.get("ph") == "X"
                      and round(e["ts"] * 1000) == round((op.ts + trace.origin_us) * 1000))
        want = launched_by(events, raw_op)
        assert any(name.startswith("nvjet") for name, _ in want) and any("Memset" in n for n, _ in want)
        reached: list[tuple[str, int]] = []
        kernels = screen.query_one(KernelTable)
        for _ in range(2 * len(want) + 1):
            await pilot.press("g")
            await pilot.pause()
            kind, ident = screen.selected
            if kind == "gpu":
                assert app.focused is kernels and kernels.current() == ident
                g = trace.gpu[ident]
                reached.append((g.name, round((g.ts + trace.origin_us) * 1000)))
            else:
                assert app.focused is tree and tree.current_op() == ident
                if ident != op.id:      # each kernel comes after the call that launched it
                    assert trace.ops[ident].cat in LAUNCH_CATS
        assert reached == want
        assert screen.selected == ("op", op.id), "the walk ends back on the op"


async def test_g_from_a_kernel_launched_under_python_frames_with_frames_hidden() -> None:
    """B200 kernels launched straight from Python code (their innermost open slice is a frame): with the
    frames hidden, `g` lands on the nearest shown op, whose span holds the kernel's launch call."""
    path = ROOT.parent / "shared" / "corpus" / "real" / "AMD-AGI__TraceLens__b200_eager_trace.json.gz"
    if not path.exists():
        pytest.skip("real-trace corpus not available")
    events = orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    launches = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
                and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    app = make_app([str(path)])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen, timeout=60)
        trace = screen.facts.trace
        tree = screen.query_one(OpTree)
        await pilot.press("f")
        kernels = screen.query_one(KernelTable)
        gid = next(g for g in kernels.rows if trace.gpu[g].op >= 0 and trace.ops[trace.gpu[g].op].cat == "python_function")
        kernels.focus()
        kernels.select_gpu(gid)
        await pilot.pause()
        assert screen.selected == ("gpu", gid)
        await pilot.press("g")
        await pilot.pause()
        kind, op_id = screen.selected
        op = trace.ops[op_id]
        assert kind == "op" and app.focused is tree and tree.current_op() == op_id and op.cat != "python_function"
        call = launches[trace.gpu_args(gid)["correlation"]]
        start, end = op.ts + trace.origin_us, op.ts + op.dur + trace.origin_us
        assert start - 1e-3 <= call["ts"] and call["ts"] + call["dur"] <= end + 1e-3
