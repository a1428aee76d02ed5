"""Records of checked compiled kernels (runners/mlptui/runners/fused/kept_kernels.py): what is written, and
every case where a record must not be trusted and the launcher must take Triton's dispatcher instead.

On the CPU: the records' file format and refusals. Loading a recorded binary and launching it needs a GPU:
tests/test_fused_mlp_gpu.py checks that in a new process (bit for bit against the dispatcher's launch)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from mlptui.runners.fused import kept_kernels, tuning_cache  # noqa: E402
from mlptui.runners.fused.kernels import fused_geglu_gateup_gemm_kernel  # noqa: E402


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.delenv("MLPTUI_KEPT_KERNELS", raising=False)
    tuning_cache.forget_loaded()


def _compiled(constants: dict[Any, Any] | None = None) -> SimpleNamespace:
    src = SimpleNamespace(signature={"x_ptr": "*bf16", "M": "i32", "BLOCK_M": "constexpr"},
                          constants=constants if constants is not None else {(2,): 128, (3,): True, (4,): None})
    return SimpleNamespace(src=src, hash="ab" * 32, name="fused_geglu_gateup_gemm_kernel")


def _path() -> Path:
    return kept_kernels.records_file(tuning_cache.cache_file("Some GPU sm90", "3.6.0"))


def test_a_record_keeps_what_triton_needs_to_rebuild_the_kernel() -> None:
    path, key = _path(), kept_kernels.record_key("n3072-k768-bfloat16-m8192", "cfg-tma", 132, 16)
    kept_kernels.remember(path, key, _compiled())
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert path.name.startswith("kernels-") and path.parent == tuning_cache.cache_folder()
    assert doc[key] == {"stamp": kept_kernels.source_stamp(), "hash": "ab" * 32,
                        "name": "fused_geglu_gateup_gemm_kernel",
                        "signature": {"x_ptr": "*bf16", "M": "i32", "BLOCK_M": "constexpr"},
                        "constants": [[[2], 128], [[3], True], [[4], None]]}
    # the grid and the row count's specialization are part of the key: another variant is another binary
    assert kept_kernels.record_key("e", "l", 132, 16) != kept_kernels.record_key("e", "l", 132, 1)
    assert kept_kernels.record_key("e", "l", 132, 16) != kept_kernels.record_key("e", "l", 66, 16)


def test_constants_that_do_not_travel_as_json_are_not_recorded() -> None:
    path = _path()
    kept_kernels.remember(path, "k", _compiled({(2,): object()}))
    kept_kernels.remember(path, "k2", _compiled({"BLOCK_M": 128}))  # a key Triton would have made a tuple
    assert not path.exists()


def _watch_cache(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The hashes the loader asks Triton's cache for."""
    import triton.runtime.cache as cache

    asked: list[str] = []
    real = cache.get_cache_manager

    def watched(key: str) -> Any:
        asked.append(key)
        return real(key)

    monkeypatch.setattr(cache, "get_cache_manager", watched)
    return asked


def test_a_record_from_other_sources_or_a_damaged_one_never_reaches_tritons_cache(
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _path()
    kept_kernels.remember(path, "k", _compiled())
    record = tuning_cache.record(path, "k")
    asked = _watch_cache(monkeypatch)
    for damaged in ({**record, "stamp": "0" * 64}, {"hash": record["hash"]}, "not a record", None):
        tuning_cache.store_record(path, "k", damaged)
        tuning_cache.forget_loaded()
        assert kept_kernels.load(path, "k", fused_geglu_gateup_gemm_kernel) is None, damaged
    assert asked == []


def test_a_record_whose_binary_left_tritons_cache_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is good, Triton's cache folder is empty (cleared, or another TRITON_CACHE_DIR)."""
    path = _path()
    kept_kernels.remember(path, "k", _compiled())
    tuning_cache.forget_loaded()
    asked = _watch_cache(monkeypatch)
    assert kept_kernels.load(path, "k", fused_geglu_gateup_gemm_kernel) is None
    assert asked == ["ab" * 32]


def test_the_stamp_follows_the_kernels_source(monkeypatch: pytest.MonkeyPatch) -> None:
    before = kept_kernels.source_stamp()
    kept_kernels.source_stamp.cache_clear()
    monkeypatch.setattr(kept_kernels, "LAUNCH_LAYOUT", kept_kernels.LAUNCH_LAYOUT + ",EXTRA")
    try:
        assert kept_kernels.source_stamp() != before
    finally:
        kept_kernels.source_stamp.cache_clear()


def test_records_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kept_kernels.enabled()
    monkeypatch.setenv("MLPTUI_KEPT_KERNELS", "off")
    assert not kept_kernels.enabled()
