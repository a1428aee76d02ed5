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
    monkeypatch.setenv("MLPTUI_KEPT_KERNELS", "on")
    tuning_cache.forget_loaded()


NAMES = list(fused_geglu_gateup_gemm_kernel.arg_names)
CONSTEXPRS = NAMES.index("BLOCK_M")  # the kernel's compile-time arguments follow its tensors and sizes


def _signature() -> dict[str, str]:
    """The kernel's own argument order, as Triton's dispatcher records it (not alphabetical)."""
    return {n: "*bf16" if n.endswith("_ptr") else "i32" if i < CONSTEXPRS else "constexpr"
            for i, n in enumerate(NAMES)}


def _compiled(constants: dict[Any, Any] | None = None) -> SimpleNamespace:
    src = SimpleNamespace(signature=_signature(),
                          constants=constants if constants is not None else
                          {(CONSTEXPRS,): 128, (CONSTEXPRS + 5,): True, (CONSTEXPRS + 9,): None})
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
                        "signature": [[n, t] for n, t in _signature().items()],
                        "constants": [[[CONSTEXPRS], 128], [[CONSTEXPRS + 5], True], [[CONSTEXPRS + 9], None]]}
    # the grid and the row count's specialization are part of the key: another variant is another binary
    assert kept_kernels.record_key("e", "l", 132, 16) != kept_kernels.record_key("e", "l", 132, 1)
    assert kept_kernels.record_key("e", "l", 132, 16) != kept_kernels.record_key("e", "l", 66, 16)


def test_the_rebuilt_source_keeps_the_launch_order_through_the_sorted_file() -> None:
    """The launcher Triton makes from the source passes arguments in the signature's order: read back from
    the file (written with sorted keys), the order must be the kernel's, not the alphabet's."""
    path = _path()
    kept_kernels.remember(path, "k", _compiled())
    tuning_cache.forget_loaded()
    src = kept_kernels.rebuilt_source(tuning_cache.record(path, "k"), fused_geglu_gateup_gemm_kernel)
    assert src is not None
    assert list(src.signature) == NAMES and list(src.signature.values()) == list(_signature().values())
    assert src.constants == {(CONSTEXPRS,): 128, (CONSTEXPRS + 5,): True, (CONSTEXPRS + 9,): None}


def test_a_record_whose_arguments_are_not_the_kernels_is_refused() -> None:
    path = _path()
    kept_kernels.remember(path, "k", _compiled())
    record = tuning_cache.record(path, "k")
    swapped = [record["signature"][1], record["signature"][0], *record["signature"][2:]]
    for wrong in ({**record, "signature": swapped}, {**record, "signature": record["signature"][:-1]},
                  {**record, "signature": dict(record["signature"])}, {**record, "name": "another_kernel"},
                  {**record, "constants": [[[len(NAMES) + 3], 1]]}, {**record, "constants": [[[], 1]]}):
        assert kept_kernels.rebuilt_source(wrong, fused_geglu_gateup_gemm_kernel) is None, wrong
    assert kept_kernels.rebuilt_source(record, fused_geglu_gateup_gemm_kernel) is not None


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


def test_records_are_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLPTUI_KEPT_KERNELS", raising=False)
    assert kept_kernels.enabled()
    monkeypatch.setenv("MLPTUI_KEPT_KERNELS", "off")
    assert not kept_kernels.enabled()
    for value in ("on", "1", ""):
        monkeypatch.setenv("MLPTUI_KEPT_KERNELS", value)
        assert kept_kernels.enabled()
