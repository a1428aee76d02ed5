"""A remote folder (`mlptui view host:dir/`) fills its picker rows like a local one, through the ssh
stand-in (tests/fake_ssh.py runs the remote script with sh, as sshd would): each row gets the manifest's
label and its figures, the findings pane shows the trace's findings (not `reading…`), a file over the
preload size gets its label from the manifest that came with its header and says `large: enter opens`,
and once opened and closed it fills its row too."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest
from app_support import rows_text, wait_for_screen
from conftest import SAMPLES
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens import picker
from mlptui.screens.picker import PickerScreen, TraceList
from mlptui.screens.trace_screen import TraceScreen
from mlptui.sources import ssh as remote_ssh

FAKE = Path(__file__).resolve().parent / "fake_ssh.py"
WANTED = ("linear-eager-1024x32x64-bf16", "mlp-eager-64x128x768x3072-bf16", "mlp-compile-64x128x768x3072-bf16")


@pytest.fixture
def remote_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("MLPTUI_SSH", f"{sys.executable} {FAKE}")
    monkeypatch.setenv("FAKE_SSH_SHELL", "sh")
    monkeypatch.setenv("MLPTUI_SSH_TIMEOUT", "20")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home = tmp_path / "home"
    folder = home / "runs"
    folder.mkdir(parents=True)
    monkeypatch.setenv("FAKE_SSH_HOME", str(home))
    remote_ssh._LISTINGS.clear()
    manifest = json.loads((SAMPLES / "manifest.json").read_text())
    names = [p.name for p in SAMPLES.glob("*.pt.trace.json.gz") if p.name.startswith(WANTED)]
    assert len(names) == 3
    for name in names:
        shutil.copyfile(SAMPLES / name, folder / name)
    manifest["runs"] = [r for r in manifest["runs"] if r.get("trace") in names]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _expected_labels(folder: Path) -> dict[str, str]:
    """The label of each file from the manifest, by hand: workload · [train ·] mode · dtype."""
    runs = json.loads((folder / "manifest.json").read_text())["runs"]
    return {r["trace"]: " · ".join([r["workload"], *(["train"] if r.get("train") else []), r["mode"], r["dtype"]])
            for r in runs}


def _kernels(path: Path) -> int:
    """Kernels launched in the last ProfilerStep (the row's step), from the raw events."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    step = max((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    corr = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and step["ts"] <= e["ts"] <= step["ts"] + step["dur"] and "correlation" in e.get("args", {})}
    return sum(1 for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in corr)


async def _picker_rows(app, pilot) -> tuple[PickerScreen, TraceList, list[list[str]]]:
    """The picker once its workers are done: the screen, its table and each row's cells."""
    screen = await wait_for_screen(app, pilot, PickerScreen, timeout=60)
    await app.workers.wait_for_complete()
    await pilot.pause()
    table = screen.query_one(TraceList)
    return screen, table, [r.split(" | ") for r in rows_text(table)]


async def test_a_remote_folder_fills_its_rows_with_the_manifest_labels(remote_folder: Path) -> None:
    app = make_app([f"testbox:{remote_folder}/"])
    async with app.run_test(size=(160, 40)) as pilot:
        screen, table, rows = await _picker_rows(app, pilot)
        labels = _expected_labels(remote_folder)
        assert sorted(r[1] for r in rows) == sorted(labels.values())
        for r in rows:
            assert r[3] not in ("…", "") and not r[3].startswith("unreadable"), r
        findings = str(screen.query_one("#picker-findings", Static).render())
        assert "reading…" not in findings and "kernel" in findings and "ProfilerStep#" in findings


async def test_a_large_remote_file_is_labelled_and_fills_once_opened(remote_folder: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(picker, "PRELOAD_BYTES", 1000)        # every file is "large" now
    app = make_app([f"testbox:{remote_folder}/"])
    labels = _expected_labels(remote_folder)
    async with app.run_test(size=(160, 40)) as pilot:
        screen, table, rows = await _picker_rows(app, pilot)
        assert sorted(r[1] for r in rows) == sorted(labels.values())
        assert all(r[3] == "large: enter opens" for r in rows), rows
        assert not any((Path(remote_ssh.remote_cache.cache_root())).rglob("*.json.gz"))   # nothing fetched
        first = table.specs[table.cursor]
        await pilot.press("enter")
        await wait_for_screen(app, pilot, TraceScreen, timeout=60)
        await pilot.press("escape")
        await wait_for_screen(app, pilot, PickerScreen)
        row = rows_text(table)[table.cursor].split(" | ")
        name = first.rsplit("/", 1)[-1]
        assert row[1] == labels[name] and row[2] == str(_kernels(remote_folder / name))
        assert "reading…" not in str(screen.query_one("#picker-findings", Static).render())


async def test_a_large_local_file_is_labelled_from_its_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(picker, "PRELOAD_BYTES", 1000)
    labels = _expected_labels(SAMPLES)
    app = make_app([str(SAMPLES)])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen, timeout=60)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = screen.query_one(TraceList)
        for spec, row in zip(table.specs, rows_text(table), strict=True):
            cells = row.split(" | ")
            if spec in screen.folders:          # the attention rung and the two-GPU runs: never read here
                assert cells[3].startswith(("run of 2 ranks", "folder of 8 traces"))
                continue
            assert cells[3] == "large: enter opens"
            assert cells[1] == labels.get(spec.rsplit("/", 1)[-1], cells[1])
        assert sum(1 for r in rows_text(table) if r.split(" | ")[1] in labels.values()) >= 7
