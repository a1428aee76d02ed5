"""Shared fixtures: the real-trace corpus, the bundled sample traces, and tiny synthetic traces."""

from __future__ import annotations

import gzip
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"
SAMPLES = ROOT / "sample_traces"
# CI clones the repository with shared/ beside it, as on the development machine.
CORPUS = ROOT.parent / "shared" / "corpus" / "hta"


# End-to-end modules: subprocesses (the CLI, torch on the CPU, Triton's interpreter), tmux, a real
# sshd, local servers, the Hub stand-in, snapshot rendering, wheel builds. `pytest -m "not slow"` is the
# quick loop; CI runs everything. A test elsewhere that is slow says so with @pytest.mark.slow.
SLOW_MODULES = frozenset({
    "test_app_cli", "test_app_hostile", "test_app_snapshots", "test_bench", "test_diff_tmux", "test_fuzz",
    "test_fused_mlp", "test_hostile_input", "test_hub_read", "test_hub_standin", "test_import_hygiene",
    "test_layering", "test_perfetto", "test_push_hub", "test_runners_cli", "test_runners_liger_source",
    "test_runners_output", "test_runners_ranks", "test_runners_samples", "test_serve", "test_serve_bounds", "test_ssh_injection",
    "test_ssh_remote", "test_ssh_tmux", "test_tmux_app", "test_wheel", "test_views_snapshots", "test_picker_remote",
    "test_mcp_server",
})


# Modules that read every trace of the corpus, each several ways: minutes on two cores, so a tier of their own
# (`-m corpus`); CI runs them with the rest.
CORPUS_MODULES = frozenset({
    "test_load_parallel", "test_index_columnar", "test_load_pieces", "test_corpus_real", "test_kernel_figures",
    "test_index_tree", "test_operator_self_time", "test_names", "test_ranks_corpus", "test_index_cache_guard",
    "test_occupancy", "test_mcp_corpus",
})

_DRIVES_THE_APP: dict[Path, bool] = {}


def _drives_the_app(path: Path) -> bool:
    """A module that runs a Textual app (run_test) or compares its snapshots: the app tier."""
    if path not in _DRIVES_THE_APP:
        text = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
        _DRIVES_THE_APP[path] = "run_test(" in text or "snap_compare" in text
    return _DRIVES_THE_APP[path]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers (CONTRIBUTING.md): slow = the modules above and any test marked so; app = a test in a module
    that drives the app; corpus = the corpus-wide modules; the fast tier is everything else
    (`-m "not slow and not app and not corpus"`)."""
    for item in items:
        if item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if item.path.stem in CORPUS_MODULES:
            item.add_marker(pytest.mark.corpus)
        if _drives_the_app(item.path):
            item.add_marker(pytest.mark.app)


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory: pytest.TempPathFactory):
    """Every test (and every process a test starts) caches under a temporary folder, never in the real home."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, enabled index cache for one test, caching even the small sample traces."""
    from mlptui.trace.parse import index_cache

    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)     # the sample traces are small
    return home


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"trace corpus not found at {CORPUS}")
    return CORPUS


def find_sample(workload: str, mode: str, dtype: str | None = None) -> Path:
    """The bundled sample trace of `workload` in `mode` (by glob: file names carry shapes and a timestamp).
    Without `dtype`, a bf16 recording is preferred."""
    pattern = f"{workload}-{mode}-*" + (f"-{dtype}-*" if dtype else "") + ".pt.trace.json*"
    matches = sorted(SAMPLES.glob(pattern))
    if dtype is None:
        matches.sort(key=lambda p: ("-bf16-" in p.name, p.name))
    if not matches:
        pytest.skip(f"no sample trace for {workload} {mode} in {SAMPLES}")
    return matches[-1]


def training_sample() -> str:
    """The bundled training-step recording (several steps, memory events and nn.Module frames)."""
    return str(find_sample("mlp-train", "eager"))


@pytest.fixture(scope="session")
def sample_trace() -> Callable[..., Path]:
    """sample_trace(workload, mode, dtype=None) -> Path of the bundled trace."""
    return find_sample


def x(name: str, cat: str, ts: float, dur: float, *, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    """A complete ('X') event for synthetic traces."""
    event: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = dict(args)     # keys with spaces ("External id") come in as **{...}
    return event


def raw_step_window(events: list[dict[str, Any]], step: dict[str, Any]) -> float:
    """A step's window from the raw events (docs/figures.md): its start to the later of its end and the end
    of the device work whose launch call starts in it (by correlation)."""
    start, end = step["ts"], step["ts"] + step["dur"]
    launched = {e["args"]["correlation"] for e in events if e.get("ph") == "X"
                and e.get("cat") in ("cuda_runtime", "cuda_driver") and start <= e["ts"] < end
                and "correlation" in e.get("args", {})}
    ends = [e["ts"] + e["dur"] for e in events if e.get("ph") == "X"
            and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in launched]
    return max([end, *ends]) - start


def trace_bytes(events: list[dict[str, Any]], *, gz: bool = False, **top: Any) -> bytes:
    doc = {"schemaVersion": 1, "traceEvents": events, **top}
    data = orjson.dumps(doc)
    return gzip.compress(data) if gz else data


def kineto_generator() -> ModuleType:
    """The shared synthetic-trace tool (../shared/tools/gen_kineto_trace.py), imported rather than run in a
    subprocess; the test is skipped where it is absent."""
    if not GENERATOR.exists():
        pytest.skip(f"generator not found at {GENERATOR}")
    spec = importlib.util.spec_from_file_location("gen_kineto_trace", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
