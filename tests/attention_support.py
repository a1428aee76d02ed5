"""The attention rung's sample traces (sample_traces/attention/) and raw-event helpers that read them
without the project's own loader, for tests that check the findings against the raw events."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

ATTENTION_SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces" / "attention"


def attention_sample(workload: str, mode: str = "eager") -> Path:
    matches = sorted(ATTENTION_SAMPLES.glob(f"{workload}-{mode}-*.pt.trace.json.gz"))
    if not matches:
        pytest.skip(f"no attention sample for {workload} {mode}")
    return matches[-1]


class Raw:
    """One trace's raw events: steps, kernels/copies per step (a GPU op belongs to the step whose window
    holds its launch call, found through the shared correlation id), launch calls, CPU ops."""

    def __init__(self, path: Path) -> None:
        self.events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        x = [e for e in self.events if e.get("ph") == "X"]
        self.steps = sorted((e for e in x if str(e.get("name", "")).startswith("ProfilerStep#")),
                            key=lambda e: e["ts"])
        self.launches = {e["args"]["correlation"]: e for e in x
                         if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        self.gpu = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        self.cpu_ops = [e for e in x if e.get("cat") == "cpu_op"]
        self.annotations = [e for e in x if e.get("cat") == "user_annotation"
                            and not e["name"].startswith("ProfilerStep#")]

    def step_of(self, ts: float) -> int | None:
        for i, s in enumerate(self.steps):
            if s["ts"] <= ts <= s["ts"] + s["dur"]:
                return i
        return None

    def gpu_in_step(self, step: int, cat: str = "kernel") -> list[dict[str, Any]]:
        out = []
        for g in self.gpu:
            launch = self.launches.get(g["args"].get("correlation"))
            if g["cat"] == cat and launch is not None and self.step_of(launch["ts"]) == step:
                out.append(g)
        return out

    def launch_of(self, gpu_event: dict[str, Any]) -> dict[str, Any]:
        return self.launches[gpu_event["args"]["correlation"]]

    def enclosing(self, event: dict[str, Any]) -> list[str]:
        """Names of the CPU ops whose span holds `event`'s start on its thread, outermost first."""
        around = [o for o in self.cpu_ops if o["tid"] == event["tid"] and o["ts"] <= event["ts"]
                  and event["ts"] + event.get("dur", 0) <= o["ts"] + o["dur"]]
        return [o["name"] for o in sorted(around, key=lambda o: (o["ts"], -o["dur"]))]

    def cpu_in_step(self, step: int) -> list[dict[str, Any]]:
        s = self.steps[step]
        return [o for o in self.cpu_ops if s["ts"] <= o["ts"] <= s["ts"] + s["dur"]]

    def median_annotation_us(self) -> float:
        return statistics.median(a["dur"] for a in self.annotations)

    def median_step_gpu_us(self) -> float:
        totals = []
        for i in range(len(self.steps)):
            totals.append(sum(g["dur"] for cat in ("kernel", "gpu_memcpy", "gpu_memset")
                              for g in self.gpu_in_step(i, cat)))
        return statistics.median(totals)
