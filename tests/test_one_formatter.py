"""One value reads the same on every surface: `summary` text, `summary --md`, a pane of the trace screen,
a profiler view and the ranks view all write a duration, a size, a rate and a missing value one way.

The values are computed here from the raw events of rank 0 of the bundled tensor-parallel run, and the
expected strings are written out by hand in the documented convention (`2.86 µs`, `12.0 MiB`,
`42.7 GB/s`, `—`), so a surface that drifts from it, or a formatter that changes it, fails here."""

from __future__ import annotations

import gzip
import json

import pytest
from app_support import rows_text, wait_for_screen
from conftest import SAMPLES
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.base.units import duration, size
from mlptui.cli import main
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.ranks_screen import RanksScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.profile_tables import OperatorTable
from mlptui.widgets.steps import StepList
from mlptui.widgets.text_table import TextTable

# the run recorded without a rank delayed on purpose
RUN = next(p for p in sorted(SAMPLES.glob("tp-mlp-eager-*-x2-*"))
           if "delay" not in json.loads((p / "manifest.json").read_bytes())["distributed"])
RANK0 = next(RUN.glob("*rank-0.pt.trace.json.gz"))
STEP = "ProfilerStep#4"
SIZE = (160, 48)


def _raw() -> dict:
    with gzip.open(RANK0, "rt") as f:
        return json.load(f)


def _step_us(raw: dict) -> float:
    """The step's duration: its CPU span, which on this trace outlasts the GPU work it launched."""
    ev = next(e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("name") == STEP)
    kernels_end = max(e["ts"] + e["dur"] for e in raw["traceEvents"]
                      if e.get("cat") == "kernel" and ev["ts"] <= e["ts"] < ev["ts"] + ev["dur"])
    assert kernels_end <= ev["ts"] + ev["dur"]
    return float(ev["dur"])


def _allreduces(raw: dict) -> list[dict]:
    return [e for e in raw["traceEvents"] if e.get("cat") == "kernel" and "AllReduce" in e["name"]]


def _transfers_us() -> float:
    """Rank 0's all-reduce transfers: the ranks were recorded on one host (one clock), so each call's
    transfer runs from the last rank's arrival (the latest kernel start) to rank 0's own kernel end."""
    per_rank = []
    for path in sorted(RUN.glob("*rank-*.pt.trace.json.gz")):
        with gzip.open(path, "rt") as f:
            per_rank.append([(e["ts"], e["ts"] + e["dur"]) for e in _allreduces(json.load(f))])
    return sum(calls[0][1] - max(start for start, _ in calls) for calls in zip(*per_rank, strict=True))


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    raw = _raw()
    step = _step_us(raw)
    assert 1 <= step < 1000
    memory = raw["deviceProperties"][0]["totalGlobalMem"]
    assert 1 << 30 <= memory < 1 << 40
    nccl = _allreduces(raw)
    nbytes = nccl[0]["args"]["In msg nelems"] * 2                       # bf16
    assert nccl[0]["args"]["dtype"] == "BFloat16" and 1 << 20 <= nbytes < 1 << 30
    gbps = nbytes * len(nccl) / _transfers_us() / 1e3      # two ranks: bus = algorithm bandwidth
    return {"duration": f"{step:.2f} µs", "memory": f"{memory / (1 << 30):.1f} GiB",
            "size": f"{nbytes / (1 << 20):.1f} MiB", "rate": f"{gbps:.1f} GB/s", "missing": "—"}


def _summary(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["summary", *args]) == 0
    return capsys.readouterr().out


def _line(text: str, start: str) -> str:
    """The table row that starts with `start` (a plain text or a Markdown table)."""
    return next(ln for ln in text.splitlines() if ln.strip(" |").startswith(start + " "))


def test_summary_text_and_markdown(expected: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    for out in (_summary(capsys, str(RANK0)), _summary(capsys, str(RANK0), "--md")):
        assert expected["duration"] in _line(out, STEP)                 # the steps table's CPU column
        assert expected["memory"] in out                                 # the device line
        linear = _line(out, "aten::linear")                              # Tensor Core share unknown: no kernel of its own
        assert linear.rstrip(" |").endswith("yes " + expected["missing"])
    ranks = _summary(capsys, str(RUN))
    assert expected["duration"] in _line(ranks, STEP)
    collective = _line(ranks, "0     allreduce")
    assert expected["size"] in collective and expected["rate"] in collective


async def test_a_pane_a_view_and_the_ranks_view(expected: dict[str, str]) -> None:
    app = make_app([str(RANK0)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        step_row = next(r for r in rows_text(screen.query_one(StepList)) if r.startswith(STEP))
        assert step_row.split(" | ")[1] == expected["duration"]
        await pilot.press("o")
        view = await wait_for_screen(app, pilot, ProfileScreen)
        await app.workers.wait_for_complete()
        body = str(view.query_one("#overview-body", Static).render())
        assert expected["duration"] in _line(body, STEP) and expected["memory"] in body
        await pilot.press("p")
        await pilot.pause()
        linear = next(r for r in rows_text(view.query_one(OperatorTable)) if r.startswith("aten::linear |"))
        assert linear.split(" | ")[-1] == expected["missing"]
    app = make_app([str(RUN)])
    async with app.run_test(size=SIZE) as pilot:
        ranks = await wait_for_screen(app, pilot, RanksScreen)
        steps = rows_text(ranks.query_one("#rank-steps", TextTable))
        assert next(r for r in steps if r.startswith(STEP)).split(" | ")[1] == expected["duration"]
        rank0 = rows_text(ranks.query_one("#collectives", TextTable))[0].split(" | ")
        assert rank0[0] == "0" and rank0[3] == expected["size"] and rank0[10] == expected["rate"]



@pytest.mark.parametrize(("us", "text"), [
    (None, "—"), (0.0, "0.00 µs"), (2.864, "2.86 µs"), (999.994, "999.99 µs"),
    (999.996, "1.00 ms"),                           # the unit is chosen on the rounded figure
    (10_850.0, "10.85 ms"), (2_500_000.0, "2.50 s"), (-3_400.0, "-3.40 ms"), (86_400e6, "86400.00 s"),
])
def test_durations_at_the_unit_edges(us: float | None, text: str) -> None:
    assert duration(us) == text


@pytest.mark.parametrize(("nbytes", "text"), [
    (None, "—"), (0, "0 B"), (1023, "1023 B"), (1023.6, "1.0 KiB"), (1536, "1.5 KiB"),
    (12 * 2**20, "12.0 MiB"), (2**30 - 1, "1.0 GiB"), (-3 * 2**30, "-3.0 GiB"),
])
def test_sizes_in_binary_units(nbytes: float | None, text: str) -> None:
    assert size(nbytes) == text
