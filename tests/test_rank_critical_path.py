"""Each rank's critical path across ranks: on a shared clock, the part of an on-path collective kernel
before the last rank's matching kernel started is waiting on the other ranks (sync_wait), only the rest
kernel time. Checked on the committed 2-rank runs (one host, as their manifest's launcher says), on a copy
of one with a rank's collective kernels moved, and on a copy without its manifest (no shared clock: the
single-rank counting is kept). Every expected figure is read here from the files' raw events."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import SAMPLES, raw_step_window

from mlptui.cli import main

RUNS = sorted(SAMPLES.glob("*-x2-*"))
IDS = [p.name.split("-64x")[0] + p.name.rsplit("-", 1)[1][:9] for p in RUNS]
ELEMENT_BYTES = 2       # the runs are bf16


def _read(path: Path) -> dict[str, Any]:
    with gzip.open(path) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def _ranks(folder: Path) -> dict[int, dict[str, Any]]:
    docs = [_read(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]
    return {d["distributedInfo"]["rank"]: d for d in docs}


def _nccl(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"].lower()),
                  key=lambda e: e["ts"])


def _calls(docs: dict[int, dict[str, Any]]) -> dict[tuple[str, int, int], dict[int, dict[str, Any]]]:
    """(collective, bytes, n) -> rank -> its kernel: the n-th kernel of one collective and size on each rank."""
    calls: dict[tuple[str, int, int], dict[int, dict[str, Any]]] = defaultdict(dict)
    for rank, doc in docs.items():
        seen: dict[tuple[str, int], int] = defaultdict(int)
        for k in _nccl(doc):
            kind = (k["args"]["Collective name"], k["args"]["In msg nelems"] * ELEMENT_BYTES)
            calls[(*kind, seen[kind])][rank] = k
            seen[kind] += 1
    return calls


def _middle_step(doc: dict[str, Any]) -> dict[str, Any]:
    steps = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith(
        "ProfilerStep#")), key=lambda e: e["ts"])
    return steps[(len(steps) - 1) // 2]


def _section(folder: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["summary", str(folder), "--json"]) == 0
    sec: dict[str, Any] = orjson.loads(capsys.readouterr().out)["ranks"]["critical_path"]
    return sec


def _check_waits_against_raw(folder: Path, sec: dict[str, Any]) -> float:
    """Every on-path collective's wait is the gap from its start to the last rank's matching start, clipped
    to the kernel; each path is as long as the step window. Returns the run's total wait."""
    docs = _ranks(folder)
    calls = _calls(docs)
    assert sec["counting"] == "last arrival"
    assert [r["rank"] for r in sec["ranks"]] == sorted(docs)
    total = 0.0
    for row in sec["ranks"]:
        doc = docs[row["rank"]]
        step = _middle_step(doc)
        assert row["step"] == step["name"]
        assert row["length_us"] == pytest.approx(raw_step_window(doc["traceEvents"], step), abs=1e-2)
        assert row["window_us"] == row["length_us"]
        assert sum(row["breakdown_us"].values()) == pytest.approx(row["length_us"], abs=0.01)
        waited = 0.0
        for pc in row["collectives"]:
            call = calls[(pc["collective"], pc["bytes"], pc["index"])]
            mine = call[row["rank"]]
            assert pc["dur_us"] == pytest.approx(mine["dur"], abs=1e-3)        # the whole kernel is on the path
            last = max(k["ts"] for k in call.values())
            expected = min(max(last - mine["ts"], 0.0), mine["dur"])
            assert pc["wait_us"] == pytest.approx(expected, abs=1e-2)
            late = max(call, key=lambda r: call[r]["ts"])
            assert pc["last_rank"] == late          # no two kernels of a call start together on these runs
            waited += expected
        assert row["rank_wait_us"] == pytest.approx(waited, abs=1e-2)
        assert row["breakdown_us"]["sync_wait"] >= row["rank_wait_us"] - 1e-3
        total += waited
    return total


@pytest.mark.parametrize("folder", RUNS, ids=IDS)
def test_on_path_collectives_wait_for_the_last_rank(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    total = _check_waits_against_raw(folder, _section(folder, capsys))
    delay = orjson.loads((folder / "manifest.json").read_bytes())["distributed"].get("delay")
    if delay is not None:
        # the rank made late never waits on its path; the other one does
        sec = _section(folder, capsys)
        waits = {r["rank"]: r["rank_wait_us"] for r in sec["ranks"]}
        assert waits[delay["rank"]] == 0 and waits[1 - delay["rank"]] > 0 and total > 0


def test_a_rank_moved_later_waits_less(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of a run where, at every call, the first rank's kernel starts halfway to the last rank's
    (its end kept): its wait on the path is the new gap, computed from the moved events."""
    source = next(p for p in RUNS if "tp-mlp" in p.name and "delay" not in
                  orjson.loads((p / "manifest.json").read_bytes())["distributed"])
    out = tmp_path / source.name
    out.mkdir()
    shutil.copy(source / "manifest.json", out / "manifest.json")
    docs = {p.name: _read(p) for p in sorted(source.glob("*.pt.trace.json.gz"))}
    by_rank = {d["distributedInfo"]["rank"]: d for d in docs.values()}
    before = _calls(by_rank)
    moved = 0
    for call in before.values():
        first = min(call.values(), key=lambda k: k["ts"])
        last = max(call.values(), key=lambda k: k["ts"])
        shift = round((last["ts"] - first["ts"]) / 2, 3)
        if shift > 0:
            first["ts"] = round(first["ts"] + shift, 3)
            first["dur"] = round(first["dur"] - shift, 3)
            moved += 1
    assert moved == len(before)
    for name, doc in docs.items():
        with gzip.open(out / name, "wt") as f:
            json.dump(doc, f)
    original = _section(source, capsys)
    sec = _section(out, capsys)
    assert _check_waits_against_raw(out, sec) > 0
    waits = {r["rank"]: r["rank_wait_us"] for r in sec["ranks"]}
    was = {r["rank"]: r["rank_wait_us"] for r in original["ranks"]}
    assert any(0 < waits[r] < was[r] for r in waits)


def test_without_a_shared_clock_collectives_keep_their_measured_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = next(p for p in RUNS if "delay" in orjson.loads((p / "manifest.json").read_bytes())["distributed"])
    out = tmp_path / "copied"
    out.mkdir()
    for p in source.glob("*.pt.trace.json.gz"):
        shutil.copy(p, out / p.name)                  # no manifest: no host, no shared clock
    shared, alone = _section(source, capsys), _section(out, capsys)
    assert alone["counting"] == "measured duration" and "cannot be compared" in alone["why"]
    calls = _calls(_ranks(out))
    for a, s in zip(alone["ranks"], shared["ranks"], strict=True):
        assert a["rank_wait_us"] is None and all(pc["wait_us"] is None for pc in a["collectives"])
        assert a["length_us"] == s["length_us"]
        for pc in a["collectives"]:
            assert pc["dur_us"] == pytest.approx(calls[(pc["collective"], pc["bytes"], pc["index"])][a["rank"]]["dur"],
                                                 abs=1e-3)
        # the shared clock only moves time from kernel to sync_wait
        moved = s["rank_wait_us"]
        assert a["breakdown_us"]["kernel"] == pytest.approx(s["breakdown_us"]["kernel"] + moved, abs=2e-3)
        assert a["breakdown_us"]["sync_wait"] == pytest.approx(s["breakdown_us"]["sync_wait"] - moved, abs=2e-3)
        assert a["breakdown_us"]["kernel"] >= sum(pc["dur_us"] for pc in a["collectives"]) - 1e-3


def test_the_text_report_gives_each_rank_its_wait(capsys: pytest.CaptureFixture[str]) -> None:
    folder = next(p for p in RUNS if "delay" in orjson.loads((p / "manifest.json").read_bytes())["distributed"])
    sec = _section(folder, capsys)
    assert main(["summary", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("rank  step") and "waiting on ranks" in ln)
    for row, line in zip(sec["ranks"], lines[head + 2:head + 2 + len(sec["ranks"])], strict=True):
        assert line.split()[:2] == [str(row["rank"]), row["step"]]
        wait_ms = row["rank_wait_us"] / 1000
        shown = line.rsplit("(", 1)[0].split()[-2:]
        value = float(shown[0]) * (1 if shown[1] == "ms" else 1e-3)
        assert value == pytest.approx(wait_ms, abs=0.01)
    assert any("sync wait" in ln for ln in lines[head:head + 1])
