"""Where FlashAttention's `flash_attn_func` comes from for `attention-kernels`. The real path is the Hub
through `kernels.get_kernel`; without the Hub it falls back, in order, to the Hugging Face cache
(offline), a LOCAL_KERNELS checkout and the `flash-attn` wheel (the same FlashAttention-2 kernels,
packaged for pip). When none is there the run is skipped with one line that says why each was passed
over, the Hub's being unreachable first."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mlptui.runners.record.skipped import Skipped
from mlptui.runners.workloads.hub_sources import (
    Unavailable,
    env_offline,
    first_source,
    hub_env,
    local_kernels_entry,
    one_line,
)

REPO_ID = "kernels-community/flash-attn2"
REPO_VERSION = 3

# Exception class names (anywhere in the cause chain) that mean the Hub could not be reached at all.
_UNREACHABLE = ("ConnectError", "ConnectionError", "ConnectTimeout", "Timeout", "OfflineModeIsEnabled",
                "LocalEntryNotFoundError", "NameResolution", "MaxRetryError")


@dataclass(frozen=True)
class FoundFlash:
    func: Callable[..., Any]
    source: str
    tried: tuple[str, ...]


def unreachable(exc: BaseException) -> bool:
    """True when the failure is the network's (no route, no DNS, offline mode), not the repository's."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if any(name in type(seen).__name__ for name in _UNREACHABLE):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _get_flash_func() -> tuple[Callable[..., Any], str]:
    try:
        import kernels
    except ImportError as exc:
        raise Unavailable(f"the `kernels` package is not installed ({one_line(exc)})") from exc
    module = kernels.get_kernel(REPO_ID, version=REPO_VERSION)
    func = getattr(module, "flash_attn_func", None)
    if func is None:
        raise Unavailable(f"{REPO_ID} v{REPO_VERSION} has no flash_attn_func")
    return func, os.path.dirname(os.path.abspath(getattr(module, "__file__", None) or ""))


def from_hub() -> tuple[Callable[..., Any], str]:
    if env_offline():
        raise Unavailable("HF_HUB_OFFLINE is set")
    with hub_env(offline=False, local_kernels=None):
        try:
            func, where = _get_flash_func()
        except Unavailable:
            raise
        except Exception as exc:
            if unreachable(exc):
                raise Unavailable(f"the Hugging Face Hub is unreachable ({type(exc).__name__})") from exc
            raise
    return func, f"hub {REPO_ID} v{REPO_VERSION} ({where})"


def from_hf_cache() -> tuple[Callable[..., Any], str]:
    with hub_env(offline=True, local_kernels=None):
        try:
            func, where = _get_flash_func()
        except Unavailable:
            raise
        except Exception as exc:
            raise Unavailable(f"no cached copy of {REPO_ID} v{REPO_VERSION} ({one_line(exc, 120)})") from exc
    return func, f"hf-cache {REPO_ID} v{REPO_VERSION} ({where})"


def from_local_kernels() -> tuple[Callable[..., Any], str]:
    value = os.environ.get("LOCAL_KERNELS")
    if not value:
        raise Unavailable("LOCAL_KERNELS is not set")
    path = local_kernels_entry(value, REPO_ID)
    if path is None:
        raise Unavailable(f"LOCAL_KERNELS has no entry for {REPO_ID}")
    with hub_env(offline=True, local_kernels=value):
        func, where = _get_flash_func()
    return func, f"LOCAL_KERNELS {REPO_ID}={path} ({where})"


def from_wheel() -> tuple[Callable[..., Any], str]:
    try:
        from flash_attn import flash_attn_func  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise Unavailable(f"the flash-attn wheel is not installed ({one_line(exc, 80)})") from exc
    import importlib.metadata

    return flash_attn_func, f"flash-attn wheel {importlib.metadata.version('flash-attn')}"


CHAIN: tuple[tuple[str, Callable[[], tuple[Callable[..., Any], str]]], ...] = (
    ("hub", from_hub),
    ("hf-cache", from_hf_cache),
    ("LOCAL_KERNELS", from_local_kernels),
    ("flash-attn wheel", from_wheel),
)


def load_flash_attn_func() -> FoundFlash:
    found, tried = first_source(CHAIN, 160)
    if found is not None:
        return FoundFlash(found[0], found[1], tried)
    lead = ("the Hugging Face Hub is unreachable and no other source of " if "unreachable" in tried[0]
            else "no source of ")
    raise Skipped(f"{lead}FlashAttention ({REPO_ID}) is here; tried " + "; ".join(tried))
