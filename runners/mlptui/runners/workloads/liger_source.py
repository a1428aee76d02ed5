"""Where Liger's GeGLU MLP comes from. The real path is the Hub through `kernels`; machines without the
Hub fall back, in order, to the Hugging Face cache (offline), a LOCAL_KERNELS checkout, and the
`liger-kernel` wheel (the same Triton kernel, packaged for pip). Each run records which one ran and
why the ones before it did not."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable
from dataclasses import dataclass

from mlptui.base.errors import MlptuiError
from mlptui.runners.workloads.hub_sources import (
    Unavailable,
    env_offline,
    first_source,
    hub_env,
    local_kernels_entry,
    one_line,
)

REPO_ID = "kernels-community/liger-kernels"
REPO_VERSION = 1  # later versions of the repo have no LigerGEGLUMLP constructor


@dataclass(frozen=True)
class Found:
    cls: type
    source: str  # e.g. "hub kernels-community/liger-kernels v1 (/path)" or "liger-kernel wheel 0.8.5"
    tried: tuple[str, ...]  # "step: reason" for each source tried before it


def _get_kernel_class() -> tuple[type, str]:
    try:
        import kernels
    except ImportError as exc:
        raise Unavailable(f"the `kernels` package is not installed ({one_line(exc)})") from exc
    module = kernels.get_kernel(REPO_ID, version=REPO_VERSION)
    cls = getattr(getattr(module, "layers", None), "LigerGEGLUMLP", None)
    if cls is None:
        raise Unavailable(f"{REPO_ID} v{REPO_VERSION} has no layers.LigerGEGLUMLP")
    return cls, os.path.dirname(os.path.abspath(module.__file__ or ""))


def from_hub() -> tuple[type, str]:
    if env_offline():
        raise Unavailable("HF_HUB_OFFLINE is set")
    with hub_env(offline=False, local_kernels=None):
        cls, where = _get_kernel_class()
    return cls, f"hub {REPO_ID} v{REPO_VERSION} ({where})"


def from_hf_cache() -> tuple[type, str]:
    with hub_env(offline=True, local_kernels=None):
        cls, where = _get_kernel_class()
    return cls, f"hf-cache {REPO_ID} v{REPO_VERSION} ({where})"


def from_local_kernels() -> tuple[type, str]:
    value = os.environ.get("LOCAL_KERNELS")
    if not value:
        raise Unavailable("LOCAL_KERNELS is not set")
    path = local_kernels_entry(value, REPO_ID)
    if path is None:
        raise Unavailable(f"LOCAL_KERNELS has no entry for {REPO_ID}")
    with hub_env(offline=True, local_kernels=value):
        cls, where = _get_kernel_class()
    return cls, f"LOCAL_KERNELS {REPO_ID}={path} ({where})"


def from_wheel() -> tuple[type, str]:
    try:
        from liger_kernel.transformers import LigerGEGLUMLP
    except ImportError as exc:
        raise Unavailable(f"the liger-kernel wheel is not installed ({one_line(exc)})") from exc
    return LigerGEGLUMLP, f"liger-kernel wheel {importlib.metadata.version('liger-kernel')}"


CHAIN: tuple[tuple[str, Callable[[], tuple[type, str]]], ...] = (
    ("hub", from_hub),
    ("hf-cache", from_hf_cache),
    ("LOCAL_KERNELS", from_local_kernels),
    ("liger-kernel wheel", from_wheel),
)


def load_liger_geglu_mlp() -> Found:
    found, tried = first_source(CHAIN)
    if found is None:
        raise MlptuiError("no LigerGEGLUMLP could be loaded; tried " + "; ".join(tried))
    return Found(found[0], found[1], tried)
