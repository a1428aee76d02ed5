"""The explorer on hostile traces: a folder whose files crashed the app or stopped its picker still
lists every trace (a failed one's row says why, the others load), and traces with wrong-typed device
and launch fields, non-list Input Dims and control characters in names open with every pane drawn and
every kernel selected once (details, occupancy, roofline), sorted by every column."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from app_support import rows_text, wait_for_screen
from conftest import find_sample

from mlptui.app import make_app
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.picker import PickerScreen, TraceList
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.kernels import KernelTable

SIZE = (120, 36)
DEVICE = {"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0,
          "numSms": 132, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
          "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
          "sharedMemPerMultiprocessor": 233472, "sharedMemPerBlockOptin": 232448}
BASE = {"deviceProperties": [DEVICE], "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
     "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 50,
     "args": {"External id": 2, "Input Dims": [[64, 128], [128, 64]], "Input type": ["c10::BFloat16"] * 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 5,
     "args": {"External id": 2, "correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
     "pid": 0, "tid": 7, "ts": 10, "dur": 20,
     "args": {"External id": 2, "correlation": 7, "grid": [1, 1, 1], "block": [128, 1, 1],
              "registers per thread": 128, "shared memory": 1024, "device": 0, "stream": 7}}]}


def _variant(change) -> bytes:
    doc = copy.deepcopy(BASE)
    change(doc)
    return json.dumps(doc).encode()


def _set(path: tuple, value) -> object:
    def change(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


HOSTILE = {
    "device-name-int.json": _variant(_set(("deviceProperties", 0, "name"), 5)),
    "device-mem-str.json": _variant(_set(("deviceProperties", 0, "totalGlobalMem"), "lots")),
    "device-bigint.json": json.dumps(BASE).replace('"numSms": 132', '"numSms": 12345678901234567890123').encode(),
    "smem-str.json": _variant(_set(("traceEvents", 3, "args", "shared memory"), "lots")),
    "regs-list.json": _variant(_set(("traceEvents", 3, "args", "registers per thread"), [1])),
    "smem-inf.json": json.dumps(BASE).replace('"shared memory": 1024', '"shared memory": 1e999').encode(),
    "dims-int.json": _variant(_set(("traceEvents", 1, "args", "Input Dims"), 5)),
    "dims-mixed.json": _variant(_set(("traceEvents", 1, "args", "Input Dims"), [5, "x", [None]])),
    "ctrl-names.json": _variant(lambda d: (d["traceEvents"][3].__setitem__("name", "k\x1b]0;t\x07\x1b[2J\r"),
                                           d["traceEvents"][1].__setitem__("name", "op\x1b[31m\n"))),
    "deep-args.json": json.dumps(BASE).replace('"External id": 2, "Input Dims"',
                                               '"deep": ' + "[" * 1000 + "]" * 1000 + ', "External id": 2, '
                                               '"Input Dims"').encode(),
    "deep-value.json": json.dumps(BASE).replace('"External id": 2, "Input Dims"',
                                                '"deep": ' + "[" * 200 + "]" * 200 + ', "External id": 2, '
                                                '"Input Dims"').encode(),
}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "hostile"
    folder.mkdir()
    for name, data in HOSTILE.items():
        (folder / name).write_bytes(data)
    shutil.copy(find_sample("linear", "eager", "bf16"), folder / "good.pt.trace.json.gz")
    return folder


async def test_picker_lists_every_trace_and_a_failed_row_says_why(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    app = make_app([str(folder)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        table = screen.query_one(TraceList)
        rows = {spec.rsplit("/", 1)[-1]: text for spec, text in zip(table.specs, rows_text(table), strict=True)}
        assert len(rows) == len(HOSTILE) + 1
        assert "…" not in rows["good.pt.trace.json.gz"] and "unreadable" not in rows["good.pt.trace.json.gz"]
        assert "unreadable:" in rows["deep-args.json"] and "nested" in rows["deep-args.json"]
        for name, text in rows.items():      # every other row finished: facts or a reason, none still "…"
            assert "| … |" not in text, (name, text)
            assert "\x1b" not in text and "\n" not in text and "\r" not in text


@pytest.mark.parametrize("name", [n for n in HOSTILE if n != "deep-args.json"])
async def test_each_hostile_trace_opens_with_every_pane_and_kernel(tmp_path: Path, name: str) -> None:
    folder = _folder(tmp_path)
    if True:
        app = make_app([str(folder / name)])
        async with app.run_test(size=SIZE) as pilot:
            screen = await wait_for_screen(app, pilot, TraceScreen)
            kernels = screen.query_one(KernelTable)
            await pilot.press("3")
            for _ in range(kernels.row_count()):
                await pilot.press("j")
            for _ in range(len(kernels.columns) + 1):     # every sort column, rows drawn each time
                await pilot.press("s")
                await pilot.pause()
            await pilot.press("a", "a", "r", "2", "e", "j", "j", "6")
            await pilot.pause()
            text = screen.query_one(Details).text
            assert "\x1b" not in text, name
            assert isinstance(app.screen, TraceScreen), name
        assert app.return_code in (None, 0), name


async def test_a_refused_trace_shows_its_reason_and_esc_goes_back(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    app = make_app([str(folder / "deep-args.json")])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, LoadingScreen)
        for _ in range(100):
            await pilot.pause(0.05)
            text = str(screen.query_one("#loading-error").render())
            if text:
                break
        assert "nested" in text and "mlptui:" in text


async def test_picker_rows_of_files_that_cannot_be_read_say_why(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(find_sample("linear", "eager", "bf16"), folder / "good.pt.trace.json.gz")
    (folder / "empty.json").write_bytes(b"")
    (folder / "notes.json").write_bytes(b"hello, not a trace")
    os.mkfifo(folder / "pipe.json")
    (folder / "config.json").write_bytes(b'{"lr": 0.1}')        # another JSON document: not listed
    app = make_app([str(folder)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        table = screen.query_one(TraceList)
        for _ in range(50):
            await pilot.pause(0.1)
            rows = {spec.rsplit("/", 1)[-1]: text for spec, text in zip(table.specs, rows_text(table), strict=True)}
            if not any("| … |" in text for text in rows.values()):
                break
        assert sorted(rows) == ["empty.json", "good.pt.trace.json.gz", "notes.json", "pipe.json"]
        assert "unreadable:" in rows["empty.json"] and "empty file" in rows["empty.json"]
        assert "unreadable:" in rows["notes.json"] and "not JSON" in rows["notes.json"]
        assert "unreadable:" in rows["pipe.json"] and "named pipe" in rows["pipe.json"]
        assert "unreadable" not in rows["good.pt.trace.json.gz"]
