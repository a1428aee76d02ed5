"""Shared lookups for the diff tests: real traces found by workload/mode, never by exact name."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from mlptui.sources.dispatch import open_trace
from mlptui.trace.model import Trace

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"
CORPUS = ROOT.parent / "shared" / "corpus" / "hta"
CONTROL = CORPUS / "trace_diff__control__control.json.gz"
TEST = CORPUS / "trace_diff__test__test.json.gz"


def sample(workload: str, mode: str, dtype: str = "bf16") -> Path:
    """The recorded sample of a workload/mode (the newest when several exist)."""
    found = sorted(SAMPLES.glob(f"{workload}-{mode}-*-{dtype}-*.pt.trace.json*"))
    if not found:
        pytest.skip(f"no {workload}-{mode} {dtype} sample trace")
    return found[-1]


@lru_cache(maxsize=16)
def _load(path: str) -> Trace:
    return open_trace(path)


def load(path: Path) -> Trace:
    return _load(str(path))


def corpus_pair() -> tuple[Path, Path]:
    if not (CONTROL.exists() and TEST.exists()):
        pytest.skip("the trace_diff corpus pair is not beside the repository")
    return CONTROL, TEST
